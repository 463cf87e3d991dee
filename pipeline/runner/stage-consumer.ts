import type { Consumer, ConsumerConfig, Kafka } from 'kafkajs';

/**
 * The consumer every stage runs on: its group is `<prefix><name>`, it subscribes to `topics`
 * from the beginning, and once `isStopped()` is true a crash no longer restarts it.
 */
export async function stageConsumer(
  kafka: Kafka,
  groupId: string,
  topics: string[],
  isStopped: () => boolean,
  extra: Partial<ConsumerConfig> = {},
): Promise<Consumer> {
  const consumer = kafka.consumer({
    groupId,
    // the broker answers a fetch as soon as one record is there (minBytes 1): the wait only
    // bounds how often an idle consumer asks again, which with a dozen groups is real CPU
    maxWaitTimeInMs: 500,
    // short, so that after a crash the group stops waiting for the dead member sooner
    sessionTimeout: 10_000,
    heartbeatInterval: 3_000,
    allowAutoTopicCreation: false,
    retry: { retries: 10, initialRetryTime: 200, restartOnFailure: async () => !isStopped() },
    ...extra,
  });
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });
  return consumer;
}
