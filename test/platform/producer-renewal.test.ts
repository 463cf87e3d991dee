import net from 'node:net';
import { Kafka, logLevel, type ISocketFactory } from 'kafkajs';
import { BatchingProducer, ProducerRenewingError } from '../../platform/kafka/batching-producer';
import { ensureTopics } from '../../platform/kafka/client';
import { readTopic } from '../../platform/kafka/topic-table';
import { uniqueSuffix } from '../support/ids';

const PRODUCE = 0;

/**
 * A socket factory that lets the next Produce requests reach the broker and then closes their
 * connections instead of passing their answers on: the broker wrote the batch, the client does not
 * know whether it did (a broker dying or freezing after the append).
 */
function answerLost(): { socketFactory: ISocketFactory; cutNext(count: number): void } {
  let armed = 0;
  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = net.connect({ host, port }, onConnect);
    let cutting = false;
    const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
    socket.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (armed > 0 && Buffer.isBuffer(chunk) && chunk.length > 12 && chunk.readInt16BE(4) === PRODUCE) {
        armed--;
        cutting = true;
      }
      return write(chunk, ...rest);
    }) as typeof socket.write;
    const emit = socket.emit.bind(socket) as (event: string, ...args: unknown[]) => boolean;
    socket.emit = ((event: string, ...args: unknown[]) => {
      if (event === 'data' && cutting) {
        cutting = false;
        socket.destroy(new Error('answer lost'));
        return true;
      }
      return emit(event, ...args);
    }) as typeof socket.emit;
    return socket;
  };
  return { socketFactory, cutNext: (count) => void (armed = count) };
}

describe('a gathering producer after a send whose outcome is unknown', () => {
  it('writes the next records under a new producer id instead of reusing sequence numbers the broker already holds', async () => {
    const wire = answerLost();
    const kafka = new Kafka({ clientId: 'renewal-test', brokers: process.env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING, retry: { retries: 1, initialRetryTime: 50 }, socketFactory: wire.socketFactory });
    const topic = `renewal-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 1 }]);
    const made: { disconnect(): Promise<void> }[] = [];
    const fresh = async () => {
      const p = kafka.producer({ idempotent: true, allowAutoTopicCreation: false, retry: { retries: 1, initialRetryTime: 50 } });
      await p.connect();
      made.push(p);
      return p;
    };
    const batching = new BatchingProducer(await fresh(), { renew: fresh });
    try {
      await batching.send([{ topic, messages: [{ key: 'k', value: 'first' }] }]);
      // written by the broker, its answer lost, and so the answer to the client's one retry of it
      // (the same records, which the broker takes for the duplicate they are): the send rejects,
      // as it does when a broker stays away longer than the client's retries
      wire.cutNext(2);
      await expect(batching.send([{ topic, messages: [{ key: 'k', value: 'second' }] }])).rejects.toThrow();
      // the caller's next records, as many as the batch whose answer was lost; refused (retriable)
      // while the producer is replaced, as the runtime and the Hook URL then try again
      const sendAgain = async (): Promise<void> => {
        for (let i = 0; ; i++) {
          try {
            return await batching.send([{ topic, messages: [{ key: 'k', value: 'third' }] }]);
          } catch (err) {
            if (!(err instanceof ProducerRenewingError) || i > 100) throw err;
            await new Promise((r) => setTimeout(r, 50));
          }
        }
      };
      await sendAgain();
      const values = (await readTopic(kafka, topic)).map((m) => String(m.value));
      expect(values).toEqual(['first', 'second', 'third']);
      expect(made.length).toBe(2);
    } finally {
      await batching.close();
      await Promise.all(made.map((p) => p.disconnect().catch(() => undefined)));
    }
  });
});
