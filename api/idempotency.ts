import { createHash, randomBytes } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import { AppError, validationError } from '../core/errors';
import { errorMessage, type Logger } from '../core/log';
import { requestLog } from './request-log';
import { isSealed, open, seal, type SecretPlace } from '../core/secrets/envelope';
import type { Keyring } from '../core/secrets/keyring';
import { authOf } from './auth';

export interface IdempotencyOptions {
  redis: Redis;
  /** Prefix of every Redis key (the deployment's, so several can share one Redis). */
  prefix: string;
  /** How long a finished answer is kept for replay (24 h = 86400). */
  ttlSeconds: number;
  /** How long a request waits for another one with the same key to finish (default 10 s). */
  waitMs?: number;
  /** Lease of an in-flight claim, renewed while its request runs; a dead process loses it after this (default 10 s). */
  leaseMs?: number;
  /** Seals the stored answer: a create answer may carry a secret shown once (a signing secret). */
  keyring: Keyring;
  /** Where a failure to store an answer is reported (the answer still goes out). */
  log?: Logger;
}

/** What Redis holds under one key: a claim while the first request runs, then its answer. */
export type IdempotencyRecord =
  | { state: 'pending'; fingerprint: string; owner: string }
  | { state: 'done'; fingerprint: string; status: number; headers: Record<string, string>; /** The answer's bytes, sealed (`enc:…`). */ body: string };

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const KEY_SYNTAX = /^[\x20-\x7e]{1,255}$/;
/** Headers that describe the answer itself; per-request ones (x-request-id, date) are the replay's own. */
const REPLAYED_HEADERS = ['content-type', 'location', 'etag'];
/** 4xx answers that tell the client to try again later: replaying them would defeat that retry. */
const RETRY_LATER = new Set([408, 425, 429]);

// Every write is compare-and-set on the claim's value, so a request that lost its lease
// (it stalled past it and another took over) can neither extend, overwrite nor drop the new claim.
const EXTEND_IF = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const COMPLETE_IF = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) return 1 end return 0`;
const RELEASE_IF = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The Redis key of one Idempotency-Key; the key itself is hashed so any printable character is safe in it. */
export function idempotencyRedisKey(prefix: string, tenantId: string, apiKeyId: string, key: string): string {
  return `${prefix}idem:${tenantId}:${apiKeyId}:${sha256(key)}`;
}

/** JSON with object keys sorted, so key order and whitespace of the sent body do not matter. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * What makes two requests "the same": method, route path and the canonical body. No body at all
 * (absent or empty: the parser leaves req.body undefined for both) is its own value, distinct from
 * `{}` or `null`, because a route may treat "nothing sent" differently from an empty object.
 */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  const bodyHash = body === undefined ? 'none' : sha256(canonicalJson(body));
  return sha256(`${method.toUpperCase()} ${path}\n${bodyHash}`);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function parseRecord(raw: string): IdempotencyRecord | undefined {
  try {
    const r = JSON.parse(raw) as IdempotencyRecord | null;
    return r?.state === 'pending' || r?.state === 'done' ? r : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Idempotency-Key on writes: the first request with a key claims it (SET NX with a lease), runs,
 * and stores its 2xx/4xx answer; the same request again gets that answer replayed; concurrent ones
 * wait for it. A 5xx, or a claim whose process died, leaves the key free for a retry.
 * Mount after authentication and the JSON body parser.
 */
export function idempotency(options: IdempotencyOptions): RequestHandler {
  const waitMs = options.waitMs ?? 10_000;
  const leaseMs = options.leaseMs ?? 10_000;
  const { redis } = options;

  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers['idempotency-key'];
    if (!WRITE_METHODS.has(req.method) || header === undefined) return next();
    const key = Array.isArray(header) ? header.join(', ') : header;
    if (!KEY_SYNTAX.test(key)) {
      return next(validationError([{ field: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' }]));
    }
    const apiKey = authOf(res);
    const redisKey = idempotencyRedisKey(options.prefix, apiKey.tenant_id, apiKey.id, key);
    const fingerprint = requestFingerprint(req.method, req.baseUrl + req.path, req.body);
    const conflict = (detail: string) => new AppError('idempotency-conflict', detail, { idempotency_key: key });
    const pending = JSON.stringify({ state: 'pending', fingerprint, owner: randomBytes(12).toString('hex') } satisfies IdempotencyRecord);

    let closed = false;
    res.once('close', () => (closed = true));
    const deadline = Date.now() + waitMs;
    for (let attempt = 0; ; attempt++) {
      let raw: string | null;
      try {
        if ((await redis.set(redisKey, pending, 'PX', leaseMs, 'NX')) === 'OK') break;
        raw = await redis.get(redisKey);
      } catch (err) {
        return next(new AppError('service-unavailable', 'idempotency keys are unavailable; try again shortly', {}, true, { cause: err }));
      }
      // null: the holder finished without storing (5xx) or its lease ran out; claim it on the next turn
      const record = raw === null ? undefined : parseRecord(raw);
      if (record && record.fingerprint !== fingerprint) {
        return next(conflict(`the Idempotency-Key ${key} was already used with a different request`));
      }
      if (record?.state === 'done') return replay(res, record, options.keyring, bodyPlace(apiKey.tenant_id, redisKey));
      if (closed) return; // the client left while waiting: nobody to answer
      if (raw !== null && Date.now() >= deadline) {
        return next(conflict(`a request with the Idempotency-Key ${key} is still in progress; retry later`));
      }
      if (raw !== null) await sleep(Math.min(10 * 1.5 ** attempt, 250));
    }

    captureAnswer(req, res, { ...options, leaseMs }, { redisKey, pending, fingerprint, place: bodyPlace(apiKey.tenant_id, redisKey) });
    next();
  };
}

/** The stored answer is bound to its own Redis key: a record copied under another key does not open. */
function bodyPlace(tenantId: string, redisKey: string): SecretPlace {
  return { kind: 'idempotency', tenant: tenantId, id: redisKey, field: 'body' };
}

function replay(res: Response, record: Extract<IdempotencyRecord, { state: 'done' }>, keyring: Keyring, place: SecretPlace): void {
  // records written before answers were sealed hold base64
  const body = isSealed(record.body) ? open(keyring, place, record.body) : Buffer.from(record.body, 'base64');
  res.status(record.status);
  for (const [name, value] of Object.entries(record.headers)) res.setHeader(name, value);
  res.setHeader('idempotent-replayed', 'true');
  res.end(body);
}

type EndArgs = [chunk?: unknown, encoding?: unknown, cb?: unknown];
/** The claim this request holds: its Redis key and the exact value it wrote there. */
interface Claim {
  redisKey: string;
  pending: string;
  fingerprint: string;
  place: SecretPlace;
}

function toBuffer(chunk: unknown, encoding: unknown): Buffer | undefined {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return undefined;
  if (typeof chunk === 'string') return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  return undefined;
}

/**
 * Wraps res.write/res.end (res.json and res.send end there in express 5): the answer is stored, or
 * the claim dropped, before the last bytes go out, so a retry that follows the answer sees it.
 */
function captureAnswer(req: Request, res: Response, options: IdempotencyOptions & { leaseMs: number }, claim: Claim): void {
  const { redis, log } = options;
  const { redisKey, pending } = claim;
  const chunks: Buffer[] = [];
  const renew = setInterval(() => {
    redis.eval(EXTEND_IF, 1, redisKey, pending, options.leaseMs).catch(() => undefined); // a missed renewal is retried next tick
  }, Math.max(Math.floor(options.leaseMs / 3), 50));
  renew.unref();
  // a request that never answers (client gone, handler stuck) stops renewing and its lease runs out
  res.once('close', () => clearInterval(renew));

  const originalWrite = res.write.bind(res) as (...args: unknown[]) => boolean;
  res.write = ((...args: unknown[]) => {
    const buf = toBuffer(args[0], args[1]);
    if (buf) chunks.push(buf);
    return originalWrite(...args);
  }) as Response['write'];

  const originalEnd = res.end.bind(res) as (...args: unknown[]) => Response;
  let ending = false;
  res.end = ((...args: EndArgs) => {
    if (ending) return originalEnd(...args); // e.g. an error handler closing an answer already underway
    ending = true;
    clearInterval(renew);
    const buf = toBuffer(args[0], args[1]);
    if (buf) chunks.push(buf);
    const status = res.statusCode;
    const keep = (status >= 200 && status < 300) || (status >= 400 && status < 500 && !RETRY_LATER.has(status));
    const settle = keep
      ? redis.eval(COMPLETE_IF, 1, redisKey, pending, JSON.stringify(doneRecord(res, claim.fingerprint, seal(options.keyring, claim.place, Buffer.concat(chunks)))), options.ttlSeconds)
      : redis.eval(RELEASE_IF, 1, redisKey, pending);
    settle
      .catch((err: unknown) => (log && requestLog(res, log))?.error('idempotency record not stored', { method: req.method, path: req.path, status, error: errorMessage(err) }))
      .finally(() => originalEnd(...args));
    return res;
  }) as Response['end'];
}

function doneRecord(res: Response, fingerprint: string, sealedBody: string): IdempotencyRecord {
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = res.getHeader(name);
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return { state: 'done', fingerprint, status: res.statusCode, headers, body: sealedBody };
}
