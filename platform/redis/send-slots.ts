import type { Redis } from 'ioredis';

/*
 * One send slot of a destination's rate limit, GCRA-style: the key holds the earliest time the
 * next slot may take (µs, Redis TIME as the one clock of every process); a reservation takes
 * max(now, next) and moves next on by one interval (1 / rate). Slots are thus never closer than
 * an interval, whichever process reserved them, and a slot is never refused: a busy destination's
 * slots only lie further ahead. KEYS[1] the destination's key; ARGV[1] the interval in µs.
 * Returns the slot and now, µs.
 */
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local slot = math.max(now, tonumber(redis.call('GET', KEYS[1]) or now))
local next = slot + interval
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.max(1, math.ceil((next - now) / 1000)) + 1000)
return { string.format('%.0f', slot), string.format('%.0f', now) }
`;

const COMMAND = 'hooklineSendSlot';
type ReserveCommand = (key: string, intervalUs: number) => Promise<[string, string]>;

/** Known to be down: the caller waits at once instead of waiting for a timeout. */
const DOWN = new Set(['reconnecting', 'close', 'end']);

/** Send slots of destinations' rate limits in Redis, shared by every deliver process of a deployment. */
export class RedisSendSlots {
  private readonly reserveCommand: ReserveCommand;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {
    // ioredis runs it with EVALSHA and falls back to EVAL when the script cache lacks it
    redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: RESERVE });
    this.reserveCommand = (redis as unknown as Record<string, ReserveCommand>)[COMMAND]!.bind(redis);
  }

  /** False while the connection is known to be down. */
  get reachable(): boolean {
    return !DOWN.has(this.redis.status);
  }

  /**
   * Reserves the destination's next send slot (one round trip) and returns it as epoch
   * milliseconds of Redis's clock: an absolute time, so that a reply read late (a busy event
   * loop) does not move the slot later. Throws when Redis does not answer.
   */
  async reserve(destinationId: string, ratePerSecond: number): Promise<number> {
    return (await this.reserveSlot(destinationId, ratePerSecond)).slotMs;
  }

  /** The reserved slot and the time it was reserved at, both in Redis's clock (ms, fractional). */
  async reserveSlot(destinationId: string, ratePerSecond: number): Promise<{ slotMs: number; nowMs: number }> {
    if (!this.reachable) throw new Error('redis is not reachable');
    const [slot, now] = await this.reserveCommand(`${this.prefix}send-slot:${destinationId}`, Math.max(1, Math.round(1_000_000 / ratePerSecond)));
    return { slotMs: Number(slot) / 1000, nowMs: Number(now) / 1000 };
  }
}
