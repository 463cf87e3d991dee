import type { Consumer } from 'kafkajs';
import { errorMessage, type Logger } from '../../core/log';

/**
 * Offsets to commit, gathered for `delayMs` and sent in one request: a stage that finishes
 * many small batches commits a few times a second instead of once per batch. Only offsets whose
 * outputs Kafka has acknowledged are ever given here, so a crash still only replays.
 */
export class OffsetCommits {
  private readonly pending = new Map<string, { topic: string; partition: number; offset: string }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly consumer: Consumer,
    private readonly log: Logger,
    private readonly delayMs = 100,
  ) {}

  schedule(topic: string, partition: number, offset: bigint | string): void {
    this.pending.set(`${topic}:${partition}`, { topic, partition, offset: offset.toString() });
    this.timer ??= setTimeout(() => void this.flush(), this.delayMs);
  }

  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const offsets = [...this.pending.values()];
    this.pending.clear();
    if (offsets.length === 0) return;
    try {
      await this.consumer.commitOffsets(offsets);
    } catch (err) {
      // after a rebalance the partition may belong to another member; it replays from the last
      // commit that went through, which at-least-once allows
      this.log.warn('offset commit failed', { error: errorMessage(err) });
    }
  }
}
