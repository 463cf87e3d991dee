import type { TestService } from './service';
import { fetchTopicOffsets } from '../../platform/kafka/client';
import { groupPrefixOf } from '../../core/topics';

/** Messages the service's consumer groups have not committed yet, per group and topic (only where some are left). */
export async function consumerLag(svc: TestService): Promise<Record<string, number>> {
  const admin = svc.service.kafka.admin();
  await admin.connect();
  try {
    const prefix = groupPrefixOf(svc.config.topicPrefix);
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    const highs = new Map<string, Map<number, bigint>>();
    const lag: Record<string, number> = {};
    for (const groupId of groups) {
      for (const { topic, partitions } of await admin.fetchOffsets({ groupId })) {
        let high = highs.get(topic);
        if (!high) highs.set(topic, (high = new Map((await fetchTopicOffsets(admin, topic)).map((o) => [o.partition, BigInt(o.high)]))));
        let left = 0n;
        for (const p of partitions) {
          const committed = BigInt(p.offset) < 0n ? 0n : BigInt(p.offset);
          left += (high.get(p.partition) ?? 0n) - committed;
        }
        if (left > 0n) lag[`${groupId.slice(prefix.length)} ${topic.slice(svc.config.topicPrefix.length)}`] = Number(left);
      }
    }
    return lag;
  } finally {
    await admin.disconnect();
  }
}

/** Waits until every consumer group of the service has committed everything on its topics. */
export async function waitForIdle(svc: TestService, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lag: Record<string, number> = {};
  while (Date.now() < deadline) {
    lag = await consumerLag(svc);
    if (Object.keys(lag).length === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the pipeline still has uncommitted records after ${timeoutMs} ms: ${JSON.stringify(lag)}`);
}
