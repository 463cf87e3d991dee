import type { RateLimit } from '../../core/rate-limits';
import { errorMessage, type Logger } from '../../core/log';
import { withTimeout } from '../../core/timeout';
import type { Tenant } from '../../core/model';
import { ingestLimitsOf } from '../../core/tenants';

/** The Redis buckets the limiter leases tokens from (platform/redis/token-leases.ts). */
export interface TokenSource {
  readonly reachable: boolean;
  take(requests: readonly { key: string; limit: number; windowSeconds: number; cost: number }[]): Promise<{ granted: number; remaining: number; resetMs: number; retryMs: number }[]>;
}

/** Why a webhook was refused: the limit it is over and when to try again. */
export interface Refusal {
  scope: 'hook' | 'tenant';
  limit: RateLimit;
  retryAfterSeconds: number;
  resetSeconds: number;
}

/**
 * Tokens one process takes from a bucket at once: 2% of the limit, 1 to 50. Unspent leased
 * tokens are the only way past the limit (they were granted earlier and spent now), so N
 * processes admit at most N leases more than the Redis bucket allows; 2% keeps that small at
 * the default limits (10 of 500/s per Hook URL, 40 of 2000/s per tenant, per process) while a
 * busy Hook URL costs one Redis call per lease instead of one per webhook.
 */
export function leaseOf(limit: RateLimit): number {
  return Math.max(1, Math.min(50, Math.floor(limit.limit / 50)));
}

interface Bucket {
  scope: 'hook' | 'tenant';
  key: string;
  limit: RateLimit;
  lease: number;
  tokens: number;
  /** Known empty until then (ms, local clock): refused without asking Redis. */
  deniedUntil: number;
  /** When the bucket holds a token again (ms, local clock). */
  retryAt: number;
  resetAt: number;
  pending: Promise<boolean> | undefined;
  usedAt: number;
}

const REFUSAL_LOG_MS = 1_000;
const UNENFORCED_LOG_MS = 10_000;
/** After Redis failed to answer, how long webhooks pass without asking it again. */
const FAIL_OPEN_MS = 1_000;
const IDLE_MS = 60_000;
/**
 * Refills one webhook may wait for while earlier waiters take the tokens first. Each refill
 * admits a lease of waiters (they resume in arrival order), so a burst of W webhooks at once
 * waits for W / lease calls in turn; the bound only guards against a waiter that never wins.
 */
const MAX_ROUNDS = 1_000;

export interface IngestLimiterOptions {
  source: TokenSource;
  /** Key prefix (the topic prefix), so deployments sharing a Redis keep apart. */
  prefix: string;
  perHook: RateLimit | null;
  perTenant: RateLimit | null;
  log: Logger;
  /** Longest wait for Redis before the webhook goes through unlimited; default 200 ms. */
  timeoutMs?: number;
}

/**
 * Ingest rate limits per Hook URL and per tenant, shared by all processes through Redis buckets,
 * without a Redis call per webhook: the process leases a few tokens at a time ({@link leaseOf})
 * and spends them locally; webhooks that find the local lease empty wait together for one call.
 * When Redis does not answer within the timeout the webhook is accepted (fail open): refusing
 * all ingestion while Redis is away would be a worse outage than briefly unlimited webhooks.
 */
export class IngestLimiter {
  /** By ingester id and by tenant id: two maps, so the hot path builds no key string. */
  private readonly hooks = new Map<string, Bucket>();
  private readonly tenants = new Map<string, Bucket>();
  private readonly refusalsLogged = new Map<string, { at: number; refused: number }>();
  private readonly timeoutMs: number;
  private openUntil = 0;
  private unenforced = 0;
  private unenforcedLoggedAt = 0;
  private readonly sweeper: NodeJS.Timeout;
  /** Webhooks let through unlimited because Redis did not answer, since start. */
  unenforcedTotal = 0;
  /** Calls to Redis, since start. */
  redisCalls = 0;

  constructor(private readonly options: IngestLimiterOptions) {
    this.timeoutMs = options.timeoutMs ?? 200;
    this.sweeper = setInterval(() => this.sweep(Date.now()), IDLE_MS);
    this.sweeper.unref();
  }

  get enabled(): boolean {
    return this.options.perHook !== null || this.options.perTenant !== null;
  }

  stop(): void {
    clearInterval(this.sweeper);
  }

  /**
   * `undefined` when the webhook may be accepted, its refusal otherwise; synchronous while the
   * local leases hold tokens (the common case), a promise when they must be refilled.
   */
  admit(tenantId: string, ingesterId: string, owner?: Tenant): Refusal | undefined | Promise<Refusal | undefined> {
    // a tenant's own limits replace the settings for its Hook URLs alone
    const limits = owner?.limits ? ingestLimitsOf(owner, this.options) : this.options;
    if (limits.perHook === null && limits.perTenant === null) return undefined;
    const now = Date.now();
    if (now < this.openUntil) return this.letThrough(undefined);
    const hook = limits.perHook && this.bucket('hook', ingesterId, limits.perHook, now);
    const tenant = limits.perTenant && this.bucket('tenant', tenantId, limits.perTenant, now);
    const first = this.tryTake(hook, tenant, now);
    if (first !== 'refill') return first === undefined ? undefined : this.refused(first, tenantId, ingesterId, now);
    return this.admitAfterRefill(hook, tenant, tenantId, ingesterId);
  }

  private async admitAfterRefill(hook: Bucket | null, tenant: Bucket | null, tenantId: string, ingesterId: string): Promise<Refusal | undefined> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const ok = await this.refill([hook, tenant].filter((b): b is Bucket => b !== null && b.tokens < 1));
      const now = Date.now();
      if (!ok) return this.letThrough(undefined);
      const outcome = this.tryTake(hook, tenant, now);
      if (outcome !== 'refill') return outcome === undefined ? undefined : this.refused(outcome, tenantId, ingesterId, now);
    }
    // other webhooks kept taking every refill first
    const now = Date.now();
    const b = hook && hook.tokens < 1 ? hook : tenant!;
    return this.refused(this.refusalOf(b, now), tenantId, ingesterId, now);
  }

  /** Takes a token of each bucket, or none: the decision, or `refill` when a lease is empty. */
  private tryTake(hook: Bucket | null, tenant: Bucket | null, now: number): Refusal | undefined | 'refill' {
    if (hook && hook.tokens < 1 && now < hook.deniedUntil) return this.refusalOf(hook, now);
    if (tenant && tenant.tokens < 1 && now < tenant.deniedUntil) return this.refusalOf(tenant, now);
    if ((hook && hook.tokens < 1) || (tenant && tenant.tokens < 1)) return 'refill';
    if (hook) {
      hook.tokens--;
      hook.usedAt = now;
    }
    if (tenant) {
      tenant.tokens--;
      tenant.usedAt = now;
    }
    return undefined;
  }

  /** One Redis call for the buckets no call is already refilling; true once all have answered. */
  private async refill(empty: Bucket[]): Promise<boolean> {
    const fresh = empty.filter((b) => !b.pending);
    if (fresh.length > 0) {
      const call = this.lease(fresh);
      for (const b of fresh) {
        b.pending = call;
        void call.finally(() => {
          if (b.pending === call) b.pending = undefined;
        });
      }
    }
    const results = await Promise.all(empty.map((b) => b.pending ?? Promise.resolve(true)));
    return results.every(Boolean);
  }

  private async lease(buckets: Bucket[]): Promise<boolean> {
    const { source } = this.options;
    try {
      if (!source.reachable) throw new Error('redis connection is down');
      this.redisCalls++;
      const grants = await withTimeout(
        source.take(buckets.map((b) => ({ key: b.key, limit: b.limit.limit, windowSeconds: b.limit.windowSeconds, cost: b.lease }))),
        this.timeoutMs,
        'redis did not answer',
      );
      const now = Date.now();
      buckets.forEach((b, i) => {
        const g = grants[i]!;
        b.tokens += g.granted;
        b.resetAt = now + g.resetMs;
        b.retryAt = now + g.retryMs;
        // an empty bucket: refused here until a whole lease has refilled, so that a flood
        // over the limit costs one Redis call per lease, not one per refused webhook
        if (g.granted === 0) b.deniedUntil = now + g.retryMs + (b.lease - 1) * ((b.limit.windowSeconds * 1000) / b.limit.limit);
      });
      return true;
    } catch (err) {
      this.openUntil = Date.now() + FAIL_OPEN_MS;
      this.unenforcedError = errorMessage(err);
      return false;
    }
  }

  private unenforcedError = '';

  private letThrough(result: undefined): undefined {
    this.unenforced++;
    this.unenforcedTotal++;
    const now = Date.now();
    if (now - this.unenforcedLoggedAt >= UNENFORCED_LOG_MS) {
      this.options.log.warn('ingest rate limits not enforced: redis unavailable', { error: this.unenforcedError, webhooks_unlimited: this.unenforced });
      this.unenforcedLoggedAt = now;
      this.unenforced = 0;
    }
    return result;
  }

  private refusalOf(b: Bucket, now: number): Refusal {
    // this process asks Redis again only after deniedUntil: sooner would be refused here again
    const waitMs = Math.max(b.retryAt, b.deniedUntil) - now;
    return {
      scope: b.scope,
      limit: b.limit,
      retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
      resetSeconds: Math.max(0, Math.ceil((b.resetAt - now) / 1000)),
    };
  }

  /** Logs a Hook URL's refusals at most once a second, with how many there were. */
  private refused(refusal: Refusal, tenantId: string, ingesterId: string, now: number): Refusal {
    let entry = this.refusalsLogged.get(ingesterId);
    if (!entry) this.refusalsLogged.set(ingesterId, (entry = { at: 0, refused: 0 }));
    entry.refused++;
    if (now - entry.at >= REFUSAL_LOG_MS) {
      this.options.log.warn('webhooks refused: over the ingest rate limit', {
        tenant_id: tenantId,
        ingester_id: ingesterId,
        limit: `${refusal.limit.limit}/${refusal.limit.windowSeconds}s per ${refusal.scope === 'hook' ? 'Hook URL' : 'tenant'}`,
        refused: entry.refused,
      });
      entry.at = now;
      entry.refused = 0;
    }
    return refusal;
  }

  private bucket(scope: 'hook' | 'tenant', ownerId: string, limit: RateLimit, now: number): Bucket {
    const buckets = scope === 'hook' ? this.hooks : this.tenants;
    let b = buckets.get(ownerId);
    if (b && (b.limit.limit !== limit.limit || b.limit.windowSeconds !== limit.windowSeconds)) {
      // the tenant's limit changed: the Redis bucket counts on under the new limit
      b.limit = limit;
      b.lease = leaseOf(limit);
      b.deniedUntil = 0;
    }
    if (!b) {
      b = { scope, key: `${this.options.prefix}ingest-limit:${scope}:${ownerId}`, limit, lease: leaseOf(limit), tokens: 0, deniedUntil: 0, retryAt: now, resetAt: now, pending: undefined, usedAt: now };
      buckets.set(ownerId, b);
    }
    return b;
  }

  /** Forgets idle buckets (their unspent tokens stay charged: at most one lease each). */
  private sweep(now: number): void {
    for (const buckets of [this.hooks, this.tenants]) {
      for (const [id, b] of buckets) if (!b.pending && now - b.usedAt > IDLE_MS && now > b.deniedUntil) buckets.delete(id);
    }
    for (const [id, e] of this.refusalsLogged) if (now - e.at > IDLE_MS) this.refusalsLogged.delete(id);
  }
}
