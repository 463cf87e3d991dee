import { hash, randomBytes } from 'node:crypto';

/** Prefixes of typed identifiers: a reader of a log line knows what an id names. */
export const ID_PREFIX = {
  event: 'evt',
  delivery: 'dlv',
  destination: 'dst',
  ingester: 'ing',
  flow: 'flw',
  apiKey: 'key',
  savedPayload: 'pld',
  request: 'req',
  correlation: 'cor',
  log: 'log',
  eventType: 'etp',
  replayJob: 'rpl',
  change: 'chg',
  deadLetter: 'dlt',
  portalSession: 'pss',
  dataKey: 'dk',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * A ULID (48-bit millisecond time + 80 random bits, Crockford base32, lower case) behind a
 * type prefix. Ids sort by creation time, which keyset cursors and ClickHouse ordering use.
 */
export function newId(kind: IdKind, now = Date.now()): string {
  return `${ID_PREFIX[kind]}_${ulid(now)}`;
}

/**
 * An id that is the same every time it is derived from the same seed, so that a stage that
 * handles a record twice (at-least-once) gives its outputs the same ids both times.
 */
export function derivedId(kind: IdKind, time: number, seed: string): string {
  // the one-shot digest: derived ids are made several times per event
  return `${ID_PREFIX[kind]}_${ulid(time, hash('sha256', seed, 'buffer').subarray(0, 10))}`;
}

/** Random bytes drawn 4 KiB at a time: one system call per 409 ids instead of one per id. */
let pool = Buffer.alloc(0);
let poolOffset = 0;
function randomTen(): Buffer {
  if (poolOffset + 10 > pool.length) {
    pool = randomBytes(4096);
    poolOffset = 0;
  }
  poolOffset += 10;
  return pool.subarray(poolOffset - 10, poolOffset);
}

export function ulid(now = Date.now(), random: Buffer = randomTen()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  let bits = 0;
  let value = 0;
  let rand = '';
  for (const byte of random) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      rand += CROCKFORD[(value >>> (bits - 5)) & 31]!;
      bits -= 5;
    }
  }
  return time + rand;
}

const ID_PATTERN = /^[a-z]{3}_[0-9a-hjkmnp-tv-z]{26}$/;

export function isId(kind: IdKind, value: string): boolean {
  return value.startsWith(`${ID_PREFIX[kind]}_`) && ID_PATTERN.test(value);
}

/** Tenant ids are chosen by operators: short, URL-safe, lower case. */
export const TENANT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
