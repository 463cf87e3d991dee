import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { BreakerState } from '../../pipeline/deliver/breakers';

/** How often a deliver process says it is alive; its board expires after three missed beats. */
const BEAT_MS = 5_000;

export interface BreakerEntry {
  /** The tenant that owns the destination: readers show other tenants' breakers only as counts. */
  tenant_id: string;
  destination_id: string;
  state: Exclude<BreakerState, 'closed'>;
  /** When the breaker entered this state (ms since epoch). */
  since: number;
  /** The deliver process that holds the breaker. */
  instance: string;
}

/**
 * Circuit breakers live in each deliver process; this board publishes the ones that are not
 * closed to Redis, so that the API (in any process) can read them. Each process writes its own
 * hash, kept alive by a heartbeat: the board of a process that died expires with it, instead of
 * showing its breakers open for ever.
 */
export class BreakerBoard {
  private readonly instance = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private timer: NodeJS.Timeout | undefined;

  private readonly beatMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    options: { beatMs?: number } = {},
  ) {
    this.beatMs = options.beatMs ?? BEAT_MS;
  }

  private get expiresMs(): number {
    return 3 * this.beatMs;
  }

  private get setKey(): string {
    return `${this.prefix}breakers`;
  }

  private boardKey(instance: string): string {
    return `${this.prefix}breakers:${instance}`;
  }

  /** Starts the heartbeat of this process's board. */
  start(onError: (err: unknown) => void): void {
    const beat = () => {
      this.redis.multi().sadd(this.setKey, this.instance).pexpire(this.boardKey(this.instance), this.expiresMs).exec().catch(onError);
    };
    beat();
    this.timer = setInterval(beat, this.beatMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.redis.multi().del(this.boardKey(this.instance)).srem(this.setKey, this.instance).exec();
  }

  /** Records a state change; a closed breaker leaves the board. */
  async record(tenantId: string, destinationId: string, state: BreakerState, at = Date.now()): Promise<void> {
    const key = this.boardKey(this.instance);
    if (state === 'closed') {
      await this.redis.hdel(key, destinationId);
      return;
    }
    await this.redis.multi().hset(key, destinationId, JSON.stringify({ tenant_id: tenantId, state, since: at })).pexpire(key, this.expiresMs).sadd(this.setKey, this.instance).exec();
  }

  /** Every breaker that is open or half-open in a live deliver process. */
  async entries(): Promise<BreakerEntry[]> {
    const instances = await this.redis.smembers(this.setKey);
    const out: BreakerEntry[] = [];
    const gone: string[] = [];
    await Promise.all(
      instances.map(async (instance) => {
        const key = this.boardKey(instance);
        const [fields, ttl] = await Promise.all([this.redis.hgetall(key), this.redis.pttl(key)]);
        // -2: the board expired (the process is gone or has no breaker to show)
        if (ttl === -2 && instance !== this.instance) gone.push(instance);
        for (const [destination_id, raw] of Object.entries(fields)) {
          const v = JSON.parse(raw) as { tenant_id?: string; state: BreakerEntry['state']; since: number };
          // a record without an owner (written before owners were recorded) belongs to nobody who asks
          out.push({ tenant_id: v.tenant_id ?? '', destination_id, state: v.state, since: v.since, instance });
        }
      }),
    );
    if (gone.length > 0) await this.redis.srem(this.setKey, ...gone);
    return out.sort((a, b) => a.since - b.since);
  }
}
