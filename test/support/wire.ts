import net from 'node:net';
import type { ISocketFactory } from 'kafkajs';

const PRODUCE = 0;

export interface ProduceOnTheWire {
  acks: number;
  /** Producer id of the first record batch: -1 unless the producer is idempotent. */
  producerId: bigint;
}

/**
 * A kafkajs socket factory that reads every Produce request (v3..v8) as written to the broker:
 * size:int32, api_key:int16, api_version:int16, correlation_id:int32, client_id:string,
 * transactional_id:nullable string, acks:int16, timeout:int32, then the topics with their
 * partitions and record batches (producer_id sits 43 bytes into a batch).
 */
export function produceRequestsOnTheWire(): { requests: ProduceOnTheWire[]; socketFactory: ISocketFactory } {
  const requests: ProduceOnTheWire[] = [];
  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = net.connect({ host, port }, onConnect);
    const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
    socket.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (Buffer.isBuffer(chunk) && chunk.length > 12 && chunk.readInt16BE(4) === PRODUCE) {
        let at = 14 + chunk.readInt16BE(12);
        at += 2 + Math.max(0, chunk.readInt16BE(at));
        const acks = chunk.readInt16BE(at);
        at += 2 + 4 + 4; // acks, timeout, topic count
        at += 2 + chunk.readInt16BE(at); // topic name
        at += 4 + 4 + 4; // partition count, partition, record set size
        requests.push({ acks, producerId: chunk.readBigInt64BE(at + 43) });
      }
      return write(chunk, ...rest);
    }) as typeof socket.write;
    return socket;
  };
  return { requests, socketFactory };
}
