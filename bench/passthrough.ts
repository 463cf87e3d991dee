/**
 * The Kafka baseline: raw kafkajs consume -> produce of every record of one topic to another,
 * with what a stage of the service uses and nothing else (the same consumer settings, one
 * produce request per fetched batch with acks=all, then the batch's offset commit; no Avro,
 * no handler). A process of its own, like the service.
 *
 * Environment: PASS_BROKERS, PASS_FROM, PASS_TO, PASS_GROUP, PASS_COUNT (print the rate once
 * this many records went through). It runs until SIGTERM, so that its CPU can still be read
 * after the last record.
 */
import type { Consumer, Producer } from 'kafkajs';
import { createKafka } from '../platform/kafka/client';
import { rawLoop } from './raw-kafkajs';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

async function main(): Promise<void> {
  const kafka = createKafka(env('PASS_BROKERS').split(','), `bench-pass-${process.pid}`);
  const from = env('PASS_FROM');
  const to = env('PASS_TO');
  const count = Number(process.env.PASS_COUNT ?? 0);
  const producer: Producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const consumer: Consumer = kafka.consumer({ groupId: env('PASS_GROUP'), maxWaitTimeInMs: 50, sessionTimeout: 10_000, heartbeatInterval: 3_000, allowAutoTopicCreation: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [from], fromBeginning: true });
  let seen = 0;
  let started = 0;
  let cpuAtStart: NodeJS.CpuUsage | undefined;
  let finished = false;
  const stop = async (code: number) => {
    await consumer.disconnect().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    process.exit(code);
  };
  consumer.on(consumer.events.GROUP_JOIN, () => process.stdout.write('passthrough joined\n'));
  await rawLoop(consumer, {
    to: { producer, topic: to },
    fetched: () => {
      if (started) return;
      started = performance.now();
      cpuAtStart = process.cpuUsage();
    },
    done: (messages) => {
      seen += messages.length;
      if (count > 0 && seen >= count && !finished) {
        finished = true;
        const ms = performance.now() - started;
        const cpu = process.cpuUsage(cpuAtStart);
        process.stdout.write(`passthrough result ${JSON.stringify({ count: seen, ms, per_s: (seen / ms) * 1000, cpu_us: cpu.user + cpu.system })}\n`);
      }
    },
  });
  for (const s of ['SIGTERM', 'SIGINT'] as const) process.on(s, () => void stop(0));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
