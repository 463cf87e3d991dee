import type { Consumer, KafkaMessage, Producer } from 'kafkajs';

export interface RawLoopOptions {
  /** Each batch goes there (one produce request, acks=all) before its offset is committed. */
  to?: { producer: Producer; topic: string };
  /** Commit each batch's offset; false only reads. Default true. */
  commit?: boolean;
  partitionsConsumedConcurrently?: number;
  /** Called with each non-empty batch as it is fetched, and once it has been passed on and committed. */
  fetched?(messages: KafkaMessage[]): void;
  done?(messages: KafkaMessage[]): void;
}

/**
 * The raw kafkajs consume loop the benchmarks measure the pipeline's runtime against: per
 * fetched batch, at most one produce request and one offset commit, nothing else (no Avro, no
 * handler, no dead letters). The consumer comes connected and subscribed; it runs until the
 * caller disconnects it. The benchmarks' raw baselines all run on this one loop.
 */
export async function rawLoop(consumer: Consumer, options: RawLoopOptions = {}): Promise<void> {
  const commit = options.commit ?? true;
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 4,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      if (batch.messages.length === 0) return;
      options.fetched?.(batch.messages);
      if (options.to) await options.to.producer.sendBatch({ acks: -1, topicMessages: [{ topic: options.to.topic, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) }] });
      if (commit) await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }]);
      resolveOffset(batch.lastOffset());
      await heartbeat();
      options.done?.(batch.messages);
    },
  });
}
