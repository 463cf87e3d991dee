import type { Admin } from 'kafkajs';
import { withTimeout } from '../../core/timeout';
import { consumerGroups, groupIdOf, type Topics } from '../../core/topics';
import { consumerLag } from './lag';

/** Records waiting for one consumer group of the pipeline, summed over its topics and partitions. */
export interface StageLag {
  stage: string;
  lag: number;
}

export interface StageLagReading {
  measured_at: string;
  stages: StageLag[];
}

/**
 * The consumer lag of every consumer group of the pipeline (platform/kafka/lag.ts), for views
 * that many readers poll: one measurement serves every caller for `maxAgeMs`, and callers that
 * arrive while it runs wait for it instead of starting their own. The figure is the pipeline's,
 * shared by all tenants: it holds no tenant's data.
 */
export class StageLagReader {
  private last: { at: number; reading: StageLagReading } | undefined;
  private running: Promise<StageLagReading> | undefined;

  constructor(
    private readonly admin: Admin,
    private readonly topics: Topics,
    /** Consumer groups are `<groupPrefix><name>`. */
    private readonly groupPrefix: string,
    private readonly maxAgeMs = 5_000,
    private readonly timeoutMs = 3_000,
  ) {}

  async read(): Promise<StageLagReading> {
    if (this.last && Date.now() - this.last.at < this.maxAgeMs) return this.last.reading;
    this.running ??= this.measure().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async measure(): Promise<StageLagReading> {
    const groups = consumerGroups(this.topics);
    const lags = await withTimeout(Promise.all(groups.map((g) => consumerLag(this.admin, groupIdOf(this.groupPrefix, g.name), g.reads))), this.timeoutMs, 'consumer offsets');
    const reading = {
      measured_at: new Date().toISOString(),
      stages: groups.map((g, i) => ({ stage: g.name, lag: lags[i]!.reduce((n, t) => n + t.lag, 0) })),
    };
    this.last = { at: Date.now(), reading };
    return reading;
  }
}
