import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import sodium from 'sodium-native';

/**
 * Webhook bodies sealed at rest on Kafka: each WebhookEvent and DeliveryTask record carries its
 * body encrypted with its tenant's data key and names that key in `body_key`, so that destroying
 * the key makes every copy of the tenant's bodies on Kafka unreadable.
 *
 * Sealed bytes: format byte (1) | nonce | ciphertext | tag (16), in one of two formats:
 * - 2, bodies up to 8 KiB: XChaCha20-Poly1305 (IETF, libsodium), 24-byte random nonce. One call
 *   into libsodium writes the sealed bytes in place: about 2 µs for 1 KiB, where Node's AES-GCM
 *   costs 8 to 10, most of it making the cipher context.
 * - 1, larger bodies: AES-256-GCM (Node's OpenSSL), 12-byte random IV. From about 8 KiB on its
 *   hardware AES outruns ChaCha20 by more than the context costs. Format 1 is also every body
 *   sealed before format 2 existed, and still opens.
 * The cipher key is not the data key itself but a subkey derived from it per format and UTC day of
 * the record's `received_at` (HKDF): format 1's random 96-bit IVs stay safe for 2^32 seals per key,
 * and a day's subkey sees one tenant's day of events. The additional data binds the format, the tenant,
 * the event and the key id: a sealed body moved to another event, tenant or key does not open.
 */
const GCM = 1;
const XCHACHA = 2;
/** The largest body sealed in format 2. */
export const XCHACHA_MAX_BYTES = 8 * 1024;
const IV = 12;
const NONCE = 24;
const TAG = 16;
const DAY_MS = 86_400_000;

/** A tenant's data key, unwrapped: 32 random bytes and the id (`dk_…`) records name it by. */
export interface BodyKey {
  id: string;
  key: Buffer;
}

/** What a sealed body is bound to, read from its record. */
export interface BodyPlace {
  tenant_id: string;
  event_id: string;
  received_at: number;
}

/** A record whose body is sealed on Kafka: `body_key` null is a body in clear (records written before sealing). */
export interface SealableRecord extends BodyPlace {
  body: Buffer;
  body_key?: string | null;
}

/**
 * The tenants' data keys as the codec needs them: the ones this process holds without waiting,
 * and the two waits (a key made for a tenant that has none, a key looked for once this process
 * has every configuration write made before).
 */
export interface BodyKeys {
  /** The key the tenant's bodies are sealed with now, when this process holds one. */
  current(tenantId: string): BodyKey | undefined;
  /** `current`, made first (one configuration write) when the tenant has none. */
  ensure(tenantId: string): Promise<BodyKey>;
  /** A key of the tenant by id, when this process holds it. */
  byId(tenantId: string, keyId: string): BodyKey | undefined;
  /** `byId` once this process has applied every configuration write made before the call; undefined: the key is gone. */
  find(tenantId: string, keyId: string): Promise<BodyKey | undefined>;
}

/**
 * Bodies sealed and opened by this process (cipher runs, not counting bodies written again with
 * their sealed bytes or found among the kept ones), and the seconds its sealers took: every seal, open and look-up among the
 * kept bodies, timed on the clock (the work is synchronous, so it is CPU time but for the rare
 * preemption). The metric `hookline_body_sealing_seconds_total` and the bench read them.
 */
export const bodySealings = { sealed: 0, opened: 0, seconds: 0 };

function clocked(startedMs: number): void {
  bodySealings.seconds += (performance.now() - startedMs) / 1000;
}

/** A sealed body that does not open: its key is gone (the tenant erased) or the bytes are not what was sealed. */
export class UnopenableBodyError extends Error {
  override name = 'UnopenableBodyError';
}

/**
 * The subkeys of one data key, by day; the last few days only (an older day's is derived again).
 * The AES-GCM ones as key objects: a cipher made from a key object skips the key's import, which
 * is most of what a cipher costs to make (about 8 against 20 µs for 1 KiB on Node 24's OpenSSL 3.5).
 */
interface DaySubkeys {
  gcm?: KeyObject;
  xchacha?: Buffer;
}
const subkeys = new WeakMap<Buffer, Map<number, DaySubkeys>>();
const KEPT_DAYS = 4;

function daySubkeys(key: Buffer, day: number): DaySubkeys {
  let days = subkeys.get(key);
  if (!days) subkeys.set(key, (days = new Map()));
  let subs = days.get(day);
  if (!subs) {
    if (days.size >= KEPT_DAYS) days.delete(days.keys().next().value!);
    days.set(day, (subs = {}));
  }
  return subs;
}

function derive(key: Buffer, format: number, day: number): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `hookline body v${format} day ${day}`, 32));
}

function gcmSubkey(key: Buffer, receivedAt: number): KeyObject {
  const day = dayOf(receivedAt);
  return (daySubkeys(key, day).gcm ??= createSecretKey(derive(key, GCM, day)));
}

function xchachaSubkey(key: Buffer, receivedAt: number): Buffer {
  const day = dayOf(receivedAt);
  return (daySubkeys(key, day).xchacha ??= derive(key, XCHACHA, day));
}

/** Random bytes drawn 4 KiB at a time: one generator call per 170 to 341 seals instead of one per seal. */
let noncePool = Buffer.alloc(0);
let nonceAt = 0;
/** Copies `length` fresh random bytes (an IV or a nonce) into `to` at `at`. */
function freshNonce(to: Buffer, at: number, length: number): void {
  if (nonceAt + length > noncePool.length) {
    noncePool = randomBytes(4096);
    nonceAt = 0;
  }
  noncePool.copy(to, at, nonceAt, nonceAt + length);
  nonceAt += length;
}

function aadOf(format: number, keyId: string, place: BodyPlace): Buffer {
  return Buffer.from(JSON.stringify([format, keyId, place.tenant_id, place.event_id]));
}

/** The body sealed with `key` for its place: format 2 up to XCHACHA_MAX_BYTES, format 1 above. */
export function sealBody(key: BodyKey, place: BodyPlace, body: Buffer, format = body.length <= XCHACHA_MAX_BYTES ? XCHACHA : GCM): Buffer {
  bodySealings.sealed++;
  if (format === XCHACHA) {
    // written in place by libsodium: format, nonce, ciphertext and tag
    const sealed = Buffer.allocUnsafe(1 + NONCE + body.length + TAG);
    sealed[0] = XCHACHA;
    freshNonce(sealed, 1, NONCE);
    sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(sealed.subarray(1 + NONCE), body, aadOf(XCHACHA, key.id, place), null, sealed.subarray(1, 1 + NONCE), xchachaSubkey(key.key, place.received_at));
    return sealed;
  }
  const sealed = Buffer.allocUnsafe(1 + IV + body.length + TAG);
  sealed[0] = GCM;
  freshNonce(sealed, 1, IV);
  const c = createCipheriv('aes-256-gcm', gcmSubkey(key.key, place.received_at), sealed.subarray(1, 1 + IV));
  c.setAAD(aadOf(GCM, key.id, place));
  const text = c.update(body);
  if (text.length !== body.length || c.final().length !== 0) throw new Error('AES-GCM returned a ciphertext of another length than its text');
  text.copy(sealed, 1 + IV);
  c.getAuthTag().copy(sealed, 1 + IV + body.length);
  return sealed;
}

/** The body `sealed` holds; throws UnopenableBodyError when it does not open with `key` at this place. */
export function openBody(key: BodyKey, place: BodyPlace, sealed: Buffer): Buffer {
  const format = sealed[0];
  if (format !== GCM && format !== XCHACHA) {
    if (sealed.length === 0) throw new UnopenableBodyError(`the sealed body of ${place.event_id} is truncated`);
    throw new UnopenableBodyError(`the sealed body of ${place.event_id} is in format ${format}, which this version does not read`);
  }
  const nonce = format === XCHACHA ? NONCE : IV;
  if (sealed.length < 1 + nonce + TAG) throw new UnopenableBodyError(`the sealed body of ${place.event_id} is truncated`);
  bodySealings.opened++;
  try {
    if (format === XCHACHA) {
      const body = Buffer.allocUnsafe(sealed.length - 1 - NONCE - TAG);
      sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(body, null, sealed.subarray(1 + NONCE), aadOf(XCHACHA, key.id, place), sealed.subarray(1, 1 + NONCE), xchachaSubkey(key.key, place.received_at));
      return body;
    }
    const d = createDecipheriv('aes-256-gcm', gcmSubkey(key.key, place.received_at), sealed.subarray(1, 1 + IV));
    d.setAAD(aadOf(GCM, key.id, place));
    d.setAuthTag(sealed.subarray(sealed.length - TAG));
    return Buffer.concat([d.update(sealed.subarray(1 + IV, sealed.length - TAG)), d.final()]);
  } catch {
    throw new UnopenableBodyError(`the sealed body of ${place.event_id} does not open with key ${key.id}: it belongs elsewhere or was altered`);
  }
}

/** The sealed form of a body this process opened or sealed, kept while the body is: written again, it is not sealed again. */
interface Sealed {
  keyId: string;
  tenantId: string;
  eventId: string;
  day: number;
  bytes: Buffer;
}

/** How many of the latest bodies a process keeps beside their sealed bytes, and their bytes at most. */
const RECENT_ENTRIES = 8_192;
const RECENT_BYTES = 16 * 1024 * 1024;

/**
 * Seals and opens the bodies of records as the codec encodes and decodes them. A body is sealed
 * once: a record written again with the same body (the stages' outputs, a retry, a delay tier)
 * carries the sealed bytes it was read or first written with, which are bound to the same event.
 * And the sealed bytes of the latest bodies sealed or opened here are kept with their body (a few
 * seconds' worth, bounded), so that the stages of one process that read the same event's body (the
 * validate chain, deliver, the sink) open it once: the same bytes, bound to the same event, day
 * and key, can only open to the same body. A destroyed key opens nothing, kept or not.
 * The `…Now` forms answer without a promise, or undefined when a key must be made or looked for.
 */
export class BodySealer {
  /** The kept entries by their body (the very object): a record written again with a body read or sealed here. */
  private readonly byBody = new Map<Buffer, Kept>();
  /** The same for bodies too large to keep: held no longer than the body is. */
  private readonly largeSealedOf = new WeakMap<Buffer, Sealed>();
  /** By 31 bits of the IV or nonce of their sealed bytes (random): a hit is checked against the whole sealed bytes. */
  private readonly recent = new Map<number, Kept>();
  /**
   * The same entries, oldest first, from `head` on (an evicted one's slot is undefined; one
   * replaced under its IV stays until its turn and is skipped then): evicting takes the oldest
   * here, where iterating the map from its start would step over every entry deleted since the
   * map was last rehashed, thousands once the map is full.
   */
  private order: (Kept | undefined)[] = [];
  private head = 0;
  private recentBytes = 0;

  constructor(private readonly keys: BodyKeys) {}

  sealNow<R extends SealableRecord>(record: R): R | undefined {
    // nothing to hide (a record written without its body): no key asked, nothing sealed
    if (record.body.length === 0 && record.body_key == null) return record;
    const started = performance.now();
    try {
      const kept = this.kept(record);
      if (kept) return { ...record, body: kept.bytes, body_key: kept.keyId };
      const key = this.keys.current(record.tenant_id);
      return key && this.sealWith(key, record);
    } finally {
      clocked(started);
    }
  }

  async seal<R extends SealableRecord>(record: R): Promise<R> {
    const now = this.sealNow(record);
    if (now) return now;
    const key = await this.keys.ensure(record.tenant_id);
    const started = performance.now();
    try {
      return this.sealWith(key, record);
    } finally {
      clocked(started);
    }
  }

  /**
   * The record with its body opened; a record written before sealing as it is. Throws
   * UnopenableBodyError. `own`: the record is the caller's to change (one just decoded), and gets
   * the opened body in place of the sealed one instead of being copied.
   */
  openNow<R extends SealableRecord>(record: R, own = false): R | undefined {
    if (record.body_key == null) return record;
    const started = performance.now();
    try {
      const key = this.keys.byId(record.tenant_id, record.body_key);
      return key && this.openWith(key, record, own);
    } finally {
      clocked(started);
    }
  }

  async open<R extends SealableRecord>(record: R, own = false): Promise<R> {
    const now = this.openNow(record, own);
    if (now) return now;
    const key = await this.keys.find(record.tenant_id, record.body_key!);
    if (!key) throw new UnopenableBodyError(`the body of ${record.event_id} is sealed with key ${record.body_key}, which tenant ${record.tenant_id} no longer has`);
    const started = performance.now();
    try {
      return this.openWith(key, record, own);
    } finally {
      clocked(started);
    }
  }

  private sealWith<R extends SealableRecord>(key: BodyKey, record: R): R {
    const bytes = sealBody(key, record, record.body);
    this.remember(record.body, { keyId: key.id, tenantId: record.tenant_id, eventId: record.event_id, day: dayOf(record.received_at), bytes });
    return { ...record, body: bytes, body_key: key.id };
  }

  private openWith<R extends SealableRecord>(key: BodyKey, record: R, own: boolean): R {
    const day = dayOf(record.received_at);
    const hit = record.body.length >= 1 + IV ? this.recent.get(ivOf(record.body)) : undefined;
    const s = hit?.sealed;
    if (s && s.keyId === key.id && s.tenantId === record.tenant_id && s.eventId === record.event_id && s.day === day && s.bytes.equals(record.body)) return withBody(record, hit!.body, own);
    const body = openBody(key, record, record.body);
    // a copy: the bytes read are a view of the whole fetched batch, which they would keep alive
    this.remember(body, { keyId: key.id, tenantId: record.tenant_id, eventId: record.event_id, day, bytes: Buffer.from(record.body) });
    return withBody(record, body, own);
  }

  private remember(body: Buffer, sealed: Sealed): void {
    const size = body.length + sealed.bytes.length;
    if (size > RECENT_BYTES / 16) {
      this.largeSealedOf.set(body, sealed);
      return;
    }
    const entry: Kept = { iv: ivOf(sealed.bytes), sealed, body, size };
    const replaced = this.recent.get(entry.iv);
    if (replaced) this.forget(replaced);
    this.recent.set(entry.iv, entry);
    this.byBody.set(body, entry);
    this.order.push(entry);
    this.recentBytes += size;
    while (this.recent.size > RECENT_ENTRIES || this.recentBytes > RECENT_BYTES) {
      const oldest = this.order[this.head];
      this.order[this.head++] = undefined;
      // an entry since replaced under its IV is no longer the map's
      if (oldest && this.recent.get(oldest.iv) === oldest) {
        this.recent.delete(oldest.iv);
        this.forget(oldest);
      }
    }
    if (this.head > RECENT_ENTRIES) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }

  /** An entry leaving the kept ones (evicted, or replaced under its IV). */
  private forget(entry: Kept): void {
    this.recentBytes -= entry.size;
    if (this.byBody.get(entry.body) === entry) this.byBody.delete(entry.body);
  }

  /** The sealed bytes of this very body, when they are bound to this record's event and their key is still held. */
  private kept(record: SealableRecord): Sealed | undefined {
    const s = this.byBody.get(record.body)?.sealed ?? this.largeSealedOf.get(record.body);
    if (!s || s.eventId !== record.event_id || s.tenantId !== record.tenant_id || s.day !== dayOf(record.received_at)) return undefined;
    return this.keys.byId(record.tenant_id, s.keyId) ? s : undefined;
  }
}

/** A body kept beside its sealed bytes. */
interface Kept {
  iv: number;
  sealed: Sealed;
  body: Buffer;
  size: number;
}

/** The record with `body` for its body: itself when it is the caller's to change, else a copy. */
function withBody<R extends SealableRecord>(record: R, body: Buffer, own: boolean): R {
  if (!own) return { ...record, body };
  record.body = body;
  return record;
}

/**
 * 31 random bits of the IV or nonce of sealed bytes, as a map key: a small integer, which V8
 * hashes in place where a larger number is a heap object. Two of 8,192 kept entries share one
 * about once in 260,000 seals, and then the newer replaces the older.
 */
function ivOf(sealed: Buffer): number {
  return sealed.readInt32LE(1) >> 1;
}

function dayOf(receivedAt: number): number {
  return Math.floor(receivedAt / DAY_MS);
}
