import type { Redis } from 'ioredis';

/** Tokens asked of one bucket: up to `cost` of a bucket that holds `limit` and refills them over `windowSeconds`. */
export interface LeaseRequest {
  key: string;
  limit: number;
  windowSeconds: number;
  cost: number;
}

/** What one bucket gave: `granted` tokens (0 to cost); the times are in milliseconds from now. */
export interface LeaseGrant {
  granted: number;
  /** Tokens left in the bucket after this grant. */
  remaining: number;
  /** Until the bucket is full again. */
  resetMs: number;
  /** Until one token is there again (0 when all were granted). */
  retryMs: number;
}

/*
 * The GCRA of the API's limiter (api/rate-limit.ts: one "theoretical arrival time" per bucket,
 * Redis TIME as the clock, integer microseconds) with a cost: each bucket grants as many of
 * `cost` tokens as it holds, so a caller takes a batch in one round trip and spends it locally.
 * A grant of fewer than asked is still a grant; none only when the bucket is empty. Several
 * buckets in one call are independent (a Hook URL's and its tenant's). KEYS are the buckets;
 * ARGV holds limit, window s and cost for each. Returns granted, remaining, reset µs and
 * retry µs for each bucket, flat.
 */
const LEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = {}
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[i * 3 - 2])
  local window = tonumber(ARGV[i * 3 - 1]) * 1000000
  local cost = tonumber(ARGV[i * 3])
  local interval = window / limit
  local tat = math.max(tonumber(redis.call('GET', key) or now), now)
  local granted = math.min(cost, math.floor((now + window - tat) / interval + 1e-6))
  if granted > 0 then
    tat = tat + granted * interval
    redis.call('SET', key, string.format('%.0f', tat), 'PX', math.max(1, math.ceil((tat - now) / 1000)))
  else
    granted = 0
  end
  local retry = 0
  if granted < cost then retry = math.max(0, math.ceil(tat + interval - window - now)) end
  out[#out + 1] = granted
  out[#out + 1] = math.max(0, math.floor((now + window - tat) / interval + 1e-6))
  out[#out + 1] = math.ceil(tat - now)
  out[#out + 1] = retry
end
return out
`;

const COMMAND = 'hooklineTokenLease';
type LeaseCommand = (...args: (string | number)[]) => Promise<number[]>;

/** Known to be down: the caller fails open at once instead of waiting for its timeout. */
const DOWN = new Set(['reconnecting', 'close', 'end']);

/** Leases of tokens from GCRA buckets in Redis, shared by every process that uses the same keys. */
export class RedisTokenLeases {
  private readonly lease: LeaseCommand;

  constructor(private readonly redis: Redis) {
    // ioredis runs it with EVALSHA and falls back to EVAL when the script cache lacks it
    redis.defineCommand(COMMAND, { lua: LEASE });
    this.lease = (redis as unknown as Record<string, LeaseCommand>)[COMMAND]!.bind(redis);
  }

  /** False while the connection is known to be down. */
  get reachable(): boolean {
    return !DOWN.has(this.redis.status);
  }

  async take(requests: readonly LeaseRequest[]): Promise<LeaseGrant[]> {
    const args: (string | number)[] = [requests.length];
    for (const r of requests) args.push(r.key);
    for (const r of requests) args.push(r.limit, r.windowSeconds, r.cost);
    const reply = await this.lease(...args);
    return requests.map((_, i) => ({
      granted: Number(reply[i * 4]),
      remaining: Number(reply[i * 4 + 1]),
      resetMs: Math.ceil(Number(reply[i * 4 + 2]) / 1000),
      retryMs: Math.ceil(Number(reply[i * 4 + 3]) / 1000),
    }));
  }
}
