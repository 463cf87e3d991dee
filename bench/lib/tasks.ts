import type { Producer } from 'kafkajs';
import { newId } from '../../core/ids';
import type { AvroCodec } from '../../platform/avro/codec';
import type { DeliveryTask } from '../../platform/avro/records';
import { epochMs, taggedBody } from './load';

/**
 * A backlog of `n` delivery tasks (1 KB tagged JSON bodies) for one destination on `topic`,
 * produced in batches of 500 with acks=all; resolves with the time it was all produced.
 */
export async function produceDeliveryTasks(producer: Producer, codec: AvroCodec, topic: string, to: { ingesterId: string; destinationId: string }, n: number, run: string, keyOf: (i: number) => string): Promise<number> {
  const now = Date.now();
  const values = await Promise.all(
    Array.from({ length: n }, (_, i) => {
      const task: DeliveryTask = { delivery_id: newId('delivery'), event_id: newId('event'), tenant_id: 'demo', ingester_id: to.ingesterId, destination_id: to.destinationId, correlation_id: 'cor_bench', attempt: 1, not_before: now, received_at: now, content_type: 'application/json', body: Buffer.from(taggedBody(run, i, epochMs())), replay_of: null, hops: 0 };
      return codec.encode(topic, 'DeliveryTask', task);
    }),
  );
  for (let i = 0; i < n; i += 500) {
    await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages: values.slice(i, i + 500).map((value, j) => ({ key: keyOf(i + j), value })) }] });
  }
  return epochMs();
}

/**
 * Items/s over `arrivals` (epoch ms) from `from` up to the 95th-percentile one; `overlapped` when
 * most arrived before `from` (the backlog was still being produced), and the rate is then taken
 * from the 5th percentile.
 */
export function backlogRate(arrivals: number[], from: number): { rate: number; overlapped: boolean } {
  const a = [...arrivals].sort((x, y) => x - y);
  const hi = Math.max(1, Math.floor(0.95 * a.length) - 1);
  let lo = Math.floor(0.05 * a.length);
  while (lo < hi && a[lo]! < from) lo++;
  const overlapped = hi - lo < 0.3 * a.length;
  if (overlapped) lo = Math.floor(0.05 * a.length);
  return { rate: ((hi - lo) / Math.max(1e-3, a[hi]! - a[lo]!)) * 1000, overlapped };
}
