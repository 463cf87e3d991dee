import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { BreakerState } from '../../pipeline/deliver/breakers';
import type { DeploymentPort, DeploymentView } from '../../pipeline/deliver/peers';

/** How long a deliver process counts as live after its last beat (about ten missed beats at the default DELIVERY_SYNC_MS). */
const EXPIRES_MS = 5_000;

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

/*
 * Says a process is alive (ARGV[3] = '1') and reads who is. KEYS: the live set (a sorted set
 * scored by each process's last beat, in Redis TIME so that hosts' clocks do not matter), the
 * process's own board, the board version. ARGV: instance, expiry ms, beat flag. Members older
 * than the expiry leave the set; their boards expire with them. Returns the version and the
 * live members.
 */
const BEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expires = tonumber(ARGV[2])
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[1])
  redis.call('PEXPIRE', KEYS[2], expires)
  redis.call('PEXPIRE', KEYS[1], expires * 2)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('(%.0f', now - expires))
return { redis.call('GET', KEYS[3]) or '0', redis.call('ZRANGE', KEYS[1], 0, -1) }
`;

/*
 * Records one breaker's state on the process's own board (an empty ARGV[4] removes it), counts
 * the process live and moves the version on, so that readers know to read the boards again.
 * KEYS as BEAT; ARGV: instance, expiry ms, destination id, entry.
 */
const RECORD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expires = tonumber(ARGV[2])
if ARGV[4] == '' then redis.call('HDEL', KEYS[2], ARGV[3]) else redis.call('HSET', KEYS[2], ARGV[3], ARGV[4]) end
redis.call('PEXPIRE', KEYS[2], expires)
redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[1])
redis.call('PEXPIRE', KEYS[1], expires * 2)
return redis.call('INCR', KEYS[3])
`;

type Script = (...args: (string | number)[]) => Promise<unknown>;

/**
 * Circuit breakers live in each deliver process; this board publishes the ones that are not
 * closed to Redis, where the API (in any process) and the other deliver processes read them.
 * It is also the deployment's list of live deliver processes, which their shares of
 * DELIVERY_PER_DESTINATION are counted from: each process beats (`sync`) into a set scored by
 * time, and a process that stops beating leaves the set after `expiresMs`, its board with it,
 * instead of showing its breakers open for ever.
 */
export class BreakerBoard implements DeploymentPort {
  readonly instance = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private readonly expiresMs: number;
  private readonly beat: Script;
  private readonly write: Script;
  /** The boards as last read, and the version and members they were read at. */
  private read: { at: string; entries: BreakerEntry[] } = { at: '', entries: [] };

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    options: { expiresMs?: number } = {},
  ) {
    this.expiresMs = options.expiresMs ?? EXPIRES_MS;
    redis.defineCommand('hooklineBoardBeat', { lua: BEAT, numberOfKeys: 3 });
    redis.defineCommand('hooklineBoardRecord', { lua: RECORD, numberOfKeys: 3 });
    const commands = redis as unknown as Record<string, Script>;
    this.beat = commands.hooklineBoardBeat!.bind(redis);
    this.write = commands.hooklineBoardRecord!.bind(redis);
  }

  private get keys(): [string, string, string] {
    return [`${this.prefix}deliverers`, this.boardKey(this.instance), `${this.prefix}breakers-version`];
  }

  private boardKey(instance: string): string {
    return `${this.prefix}breakers:${instance}`;
  }

  /** Leaves the live set at once, rather than after the expiry. */
  async stop(): Promise<void> {
    const [live, own, version] = this.keys;
    await this.redis.multi().del(own).zrem(live, this.instance).incr(version).exec();
  }

  /** Records a state change; a closed breaker leaves the board. */
  async record(tenantId: string, destinationId: string, state: BreakerState, at = Date.now()): Promise<void> {
    const entry = state === 'closed' ? '' : JSON.stringify({ tenant_id: tenantId, state, since: at });
    await this.write(...this.keys, this.instance, this.expiresMs, destinationId, entry);
  }

  /**
   * Beats (this process is live) and reads the live processes and their breakers: one round
   * trip, and a second only when a board or the members changed since the last read.
   */
  async sync(): Promise<DeploymentView> {
    const { version, members } = await this.members(true);
    return { members, breakers: await this.boards(version, members) };
  }

  /** Every breaker that is open or half-open in a live deliver process (read without beating). */
  async entries(): Promise<BreakerEntry[]> {
    const { version, members } = await this.members(false);
    return [...(await this.boards(version, members))].sort((a, b) => a.since - b.since);
  }

  private async members(beat: boolean): Promise<{ version: string; members: string[] }> {
    const [version, live] = (await this.beat(...this.keys, this.instance, this.expiresMs, beat ? '1' : '0')) as [string, string[]];
    // by name, not by last beat: a beat reorders the set, and a new order is no change
    return { version, members: [...live].sort() };
  }

  private async boards(version: string, members: string[]): Promise<BreakerEntry[]> {
    const at = `${version}|${members.join(',')}`;
    if (at === this.read.at) return this.read.entries;
    const pipeline = this.redis.pipeline();
    for (const m of members) pipeline.hgetall(this.boardKey(m));
    const replies = (await pipeline.exec()) ?? [];
    const entries: BreakerEntry[] = [];
    members.forEach((instance, i) => {
      const [err, fields] = replies[i] ?? [null, {}];
      if (err) throw err;
      for (const [destination_id, raw] of Object.entries(fields as Record<string, string>)) {
        const v = JSON.parse(raw) as { tenant_id?: string; state: BreakerEntry['state']; since: number };
        // a record without an owner (written before owners were recorded) belongs to nobody who asks
        entries.push({ tenant_id: v.tenant_id ?? '', destination_id, state: v.state, since: v.since, instance });
      }
    });
    this.read = { at, entries };
    return entries;
  }
}
