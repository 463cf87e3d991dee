import { createHmac, randomBytes } from 'node:crypto';
import { gzipSync, deflateSync } from 'node:zlib';
import fc from 'fast-check';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { SCOPES } from '../../core/scopes';
import { problemViolations } from '../support/problem';
import { rawRequest, socketRequest, type RawAnswer } from '../support/raw-http';
import { startReceiver, type Receiver } from '../support/receiver';
import { makeObject, seedObjects } from '../support/seed';
import { eventually, startTestService, type TestService } from '../support/service';

/**
 * Requests generated from the OpenAPI document the service serves: every operation, every
 * parameter (path, query, header, body), with valid and invalid values (wrong types, missing and
 * unknown members, huge strings and arrays, bodies nested 10,000 deep), odd content types,
 * charsets and content encodings (some of which lie), invalid UTF-8, odd methods, huge and many
 * headers; the Hook URLs with each ingester's signature scheme (valid, wrong, stale, missing);
 * the MCP endpoint with JSON-RPC bodies and every kind of Accept header. Requests node:http will
 * not send go over a bare socket.
 *
 * Properties: no answer is a 5xx; every 4xx is a well-formed RFC 9457 problem; the service is
 * healthy afterwards; every webhook a Hook URL accepted (2xx) and whose signature was valid
 * reaches the receiver exactly once, and no other does.
 *
 * CONTRACT_FUZZ_SEED reproduces a run, CONTRACT_FUZZ_RUNS widens it (default 10,000 requests).
 */

type Json = Record<string, any>;
type Auth = 'valid' | 'none' | 'junk' | 'other-tenant' | 'read-only';

interface Sample {
  kind: 'api' | 'hook' | 'mcp' | 'socket';
  /** The operation or scenario aimed at, for the statistics. */
  target: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Bytes for a bare socket (kind socket). */
  raw?: Buffer;
  /** The body has a defect the operation refuses (nesting too deep, an unknown member of a closed schema): never a 2xx. */
  mustRefuse?: boolean;
  /** The request is not valid HTTP/1.1, so Node's parser may refuse it before the app. */
  protocolInvalid?: boolean;
  hook?: HookPlan;
}

interface HookPlan {
  provider: Provider;
  /** What the signature will be (filled in when the request is sent, for the timestamps). */
  signature: 'valid' | 'wrong' | 'stale' | 'missing' | 'none';
  /** The body as the sender means it (before a content encoding). */
  plain: Buffer;
  /** gzip, deflate, or none; `lie` sends the header with a plain body. */
  encoding: 'gzip' | 'deflate' | 'none';
  lie: boolean;
  correlationId: string;
}

const PROVIDERS = ['none', 'stripe', 'github', 'standard-webhooks', 'shopify', 'slack', 'generic'] as const;
type Provider = (typeof PROVIDERS)[number];

const METHODS_ODD = ['PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'MKCOL', 'PURGE', 'QUERY', 'SEARCH', 'LINK', 'UNLOCK'];
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const DEPTH = 10_000;

// ---------------------------------------------------------------------------------------------
// the document

interface Operation {
  method: string;
  template: string;
  params: Json[];
  body?: Json;
  bodyTypes: string[];
}

function operationsOf(doc: Json): Operation[] {
  const resolve = (x: Json): Json => (typeof x?.$ref === 'string' ? resolve(x.$ref.split('/').slice(1).reduce((o: Json, k: string) => o[k], doc)) : x);
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries<Json>(doc.paths)) {
    const shared = (item.parameters ?? []).map(resolve);
    for (const [method, op] of Object.entries<Json>(item)) {
      if (!HTTP_METHODS.includes(method)) continue;
      const content = op.requestBody ? resolve(op.requestBody).content ?? {} : {};
      const bodyTypes = Object.keys(content);
      ops.push({ method: method.toUpperCase(), template, params: [...shared, ...(op.parameters ?? []).map(resolve)], body: bodyTypes.length ? content[bodyTypes[0]!].schema : undefined, bodyTypes });
    }
  }
  return ops;
}

// ---------------------------------------------------------------------------------------------
// values from schemas

interface Ctx {
  doc: Json;
  /** Seeded ids by prefix (dst, ing, flw, ...). */
  ids: Record<string, string[]>;
  tenant: string;
}

function deref(ctx: Ctx, s: Json): Json {
  let x = s;
  for (let i = 0; i < 20 && typeof x?.$ref === 'string'; i++) x = x.$ref.split('/').slice(1).reduce((o: Json, k: string) => o?.[k], ctx.doc);
  return x ?? {};
}

const printable = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 40 });

/** A value the schema accepts (as far as a generator can tell). */
function validOf(ctx: Ctx, schema: Json, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(ctx, schema);
  if (depth > 5) return fc.constant(null);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  const alts = s.anyOf ?? s.oneOf;
  if (Array.isArray(alts)) return fc.oneof(...alts.map((a: Json) => validOf(ctx, a, depth + 1)));
  if (Array.isArray(s.allOf) && s.allOf.length) return validOf(ctx, s.allOf[0], depth + 1);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'string': {
      const prefix = typeof s.pattern === 'string' ? /^\^([a-z]{3})_/.exec(s.pattern)?.[1] : undefined;
      if (prefix && ctx.ids[prefix]?.length) return fc.constantFrom(...ctx.ids[prefix]!);
      if (Array.isArray(s.examples) && s.examples.length) return fc.constantFrom(...s.examples);
      if (s.format === 'uri') return fc.constantFrom('http://127.0.0.1:9/fuzz', 'http://localhost:9/a?b=c');
      if (s.format === 'date-time') return fc.constant(new Date().toISOString());
      if (typeof s.pattern === 'string') {
        try {
          return fc.stringMatching(new RegExp(s.pattern), { size: 'xsmall' }).filter((v) => v.length <= (s.maxLength ?? 200));
        } catch {
          /* an ECMAScript-incompatible pattern: plain strings */
        }
      }
      return fc.string({ minLength: Math.max(1, s.minLength ?? 0), maxLength: Math.min(s.maxLength ?? 30, 30) });
    }
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1000, max: s.maximum ?? 100_000 });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(validOf(ctx, s.items ?? {}, depth + 1), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 3, 3) });
    case 'object':
    default: {
      const props: Json = s.properties ?? {};
      if (Object.keys(props).length === 0) return type === 'object' ? fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }) : fc.jsonValue({ maxDepth: 2 });
      const rec: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries<Json>(props)) rec[k] = validOf(ctx, v, depth + 1);
      return fc.record(rec, { requiredKeys: (s.required ?? []).filter((k: string) => k in props) });
    }
  }
}

const hugeString = fc.constantFrom(5_000, 100_000, 1_200_000).map((n) => 'x'.repeat(n));
/** A value of a type the schema does not allow, or far out of its bounds. */
const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -0, '', ' ', '\u0000', '💩', '__proto__', [], {}, [null], { '': 1 }, 'NaN', '9'.repeat(40)),
  fc.jsonValue({ maxDepth: 2 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.integer(),
  hugeString,
  fc.constantFrom(1000, 100_000).map((n) => new Array(n).fill(1)),
);

/** Text of a value nested `depth` deep, as arrays or objects. */
const deepText = (objects: boolean, depth = DEPTH) => (objects ? `${'{"a":'.repeat(depth)}null${'}'.repeat(depth)}` : `${'['.repeat(depth)}${']'.repeat(depth)}`);

/**
 * A body of the operation: valid, or valid with one defect, or not an object at all; as text.
 * `refused`: the defect is one the operation must refuse: nesting deeper than any body may, or
 * an unknown member where the document's schema says `additionalProperties: false`.
 */
function bodyTextOf(ctx: Ctx, schema: Json): fc.Arbitrary<{ text: string; refused: boolean }> {
  const closed = deref(ctx, schema).additionalProperties === false;
  const valid = validOf(ctx, schema);
  const asObject = valid.map((v) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : { value: v }));
  const members = Object.keys(deref(ctx, schema).properties ?? {});
  const member = members.length ? fc.constantFrom(...members) : fc.constant('name');
  const loose = (a: fc.Arbitrary<string>) => a.map((text) => ({ text, refused: false }));
  const unknownName = fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'tenant_id', 'created_at')).filter((k) => !members.includes(k));
  return fc.oneof(
    { arbitrary: loose(valid.map((v) => JSON.stringify(v))), weight: 5 },
    // a required (or any) member missing
    { arbitrary: loose(fc.tuple(asObject, member).map(([o, k]) => JSON.stringify({ ...o, [k]: undefined }))), weight: 2 },
    // an unknown member
    { arbitrary: fc.tuple(asObject, unknownName).map(([o, k]) => ({ text: JSON.stringify(o).replace(/^\{/, `{${JSON.stringify(k)}:1${Object.keys(o).length ? ',' : ''}`), refused: closed })), weight: 2 },
    // a member of the wrong type, huge, or nested 10,000 deep
    { arbitrary: loose(fc.tuple(asObject, member, wrongValue).map(([o, k, v]) => JSON.stringify({ ...o, [k]: v }))), weight: 4 },
    { arbitrary: fc.tuple(asObject, member, fc.boolean()).map(([o, k, objects]) => ({ text: JSON.stringify({ ...o, [k]: '__DEEP__' }).replace('"__DEEP__"', deepText(objects)), refused: true })), weight: 1 },
    // not an object
    { arbitrary: loose(fc.oneof(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? 'null'), fc.constantFrom('', '{', '{"a":1,}', "{'a':1}", 'NaN', '\ufeff{}', '{"a":"\\x"}', '{"name":"x","name":1}', deepText(false), deepText(true), `[${'1,'.repeat(200_000)}1]`))), weight: 2 },
  );
}

// ---------------------------------------------------------------------------------------------
// transport variants

/** A printable header value, sometimes huge or with Latin-1 bytes. */
const headerJunk = fc.oneof(
  printable,
  fc.constantFrom('', ' ', 'null', '-1', '1e9', 'Bearer', 'Bearer ', 'Basic Zm9vOmJhcg=='),
  fc.integer({ min: 1000, max: 12_000 }).map((n) => 'k'.repeat(n)),
  fc.string({ unit: fc.integer({ min: 0xa0, max: 0xff }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 10 }),
);

const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'APPLICATION/JSON',
  'application/json; charset=utf-16', 'application/json; charset=utf-16le', 'application/json; charset=latin1', 'application/json; charset=iso-8859-1',
  'application/json; charset=bogus', 'application/merge-patch+json', 'application/problem+json', 'text/plain', 'text/json', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', 'application/xml', '*/*', '', 'json', 'application/json;;;', 'application/octet-stream',
];

interface Transport {
  contentType: string | undefined;
  encoding: 'gzip' | 'deflate' | 'br' | 'identity' | 'gzip, deflate' | 'none';
  lie: boolean;
  /** Bytes that are not UTF-8 put inside the body. */
  badUtf8: boolean;
  chunked: boolean;
}

const transportArb: fc.Arbitrary<Transport> = fc.record({
  contentType: fc.oneof({ arbitrary: fc.constant('application/json'), weight: 12 }, { arbitrary: fc.constantFrom(...CONTENT_TYPES), weight: 6 }, { arbitrary: fc.constant(undefined), weight: 1 }),
  encoding: fc.oneof({ arbitrary: fc.constant('none' as const), weight: 14 }, { arbitrary: fc.constantFrom('gzip' as const, 'deflate' as const, 'br' as const, 'identity' as const, 'gzip, deflate' as const), weight: 4 }),
  lie: fc.boolean(),
  badUtf8: fc.oneof({ arbitrary: fc.constant(false), weight: 9 }, { arbitrary: fc.constant(true), weight: 1 }),
  chunked: fc.oneof({ arbitrary: fc.constant(false), weight: 8 }, { arbitrary: fc.constant(true), weight: 1 }),
});

/** The body's bytes and headers as the transport variant sends them. */
function encodeBody(text: string, t: Transport, headers: Record<string, string>): Buffer {
  let bytes = /charset=utf-16/.test(t.contentType ?? '') ? Buffer.from(text, 'utf16le') : /latin1|8859/.test(t.contentType ?? '') ? Buffer.from(text, 'latin1') : Buffer.from(text, 'utf8');
  if (t.badUtf8) {
    // inside the first string if there is one, else in front
    const at = Math.max(0, bytes.indexOf('"') + 1);
    bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]), bytes.subarray(at)]);
  }
  if (t.contentType !== undefined) headers['content-type'] = t.contentType;
  if (t.encoding !== 'none') {
    headers['content-encoding'] = t.encoding;
    if (!t.lie) {
      if (t.encoding === 'gzip') bytes = gzipSync(bytes);
      if (t.encoding === 'deflate') bytes = deflateSync(bytes);
      if (t.encoding === 'gzip, deflate') bytes = deflateSync(gzipSync(bytes));
      // br: always a lie here
    }
  }
  if (t.chunked && bytes.length < 100_000) headers['transfer-encoding'] = 'chunked';
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// requests

interface Seeds extends Ctx {
  keys: Record<Exclude<Auth, 'none' | 'junk'>, string>;
  otherTenant: string;
  hooks: Record<Provider, string>;
  secrets: Record<Provider, string>;
  tools: { name: string; inputSchema: Json }[];
}

const authArb = fc.oneof(
  { arbitrary: fc.constant('valid' as Auth), weight: 20 },
  { arbitrary: fc.constantFrom<Auth>('none', 'junk', 'other-tenant', 'read-only'), weight: 3 },
);

function authHeader(seeds: Seeds, auth: Auth, junk: string): string | undefined {
  if (auth === 'none') return undefined;
  if (auth === 'junk') return junk;
  return `Bearer ${seeds.keys[auth]}`;
}

/** A path segment that is not a valid value: unknown, encoded unicode, malformed escapes, huge. */
const junkSegment = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).map(encodeURIComponent),
  fc.constantFrom('..', '%2e%2e', '%2F', '%00', '%E0%A4%A', '%C0%AF', '%FF', '%', '%zz', 'null', '0', '-1', '%F0%9F%92%A9', 'dst_', 'ing_01jzzzzzzzzzzzzzzzzzzzzzzz'),
  fc.integer({ min: 300, max: 6000 }).map((n) => 'a'.repeat(n)),
);

function apiSampleArb(seeds: Seeds, op: Operation): fc.Arbitrary<Sample> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');
  const headerParams = op.params.filter((p) => p.in === 'header');
  const pathValue = (p: Json) =>
    fc.oneof(
      { arbitrary: p.name === 'tenant_id' ? fc.constant(seeds.tenant) : validOf(seeds, p.schema ?? {}).map((v) => encodeURIComponent(String(v))), weight: 8 },
      { arbitrary: p.name === 'tenant_id' ? fc.constant(seeds.otherTenant) : fc.constantFrom(...Object.values(seeds.ids).flat()), weight: 1 },
      { arbitrary: junkSegment, weight: 2 },
    );
  const queryPart = (p: Json) =>
    fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 3 },
      { arbitrary: validOf(seeds, p.schema ?? {}).map((v) => `${p.name}=${encodeURIComponent(String(v))}`), weight: 3 },
      { arbitrary: fc.oneof(wrongValue.map((v) => encodeURIComponent(typeof v === 'string' ? v.slice(0, 6000) : JSON.stringify(v)?.slice(0, 6000) ?? '')), fc.constantFrom('%', '%zz', '%FF', '1%00')).map((v) => `${p.name}=${v}`), weight: 2 },
      { arbitrary: fc.tuple(validOf(seeds, p.schema ?? {}), validOf(seeds, p.schema ?? {})).map(([a, b]) => `${p.name}=${encodeURIComponent(String(a))}&${p.name}=${encodeURIComponent(String(b))}`), weight: 1 },
      { arbitrary: fc.constant(`${p.name}[]=1&${p.name}[a]=2`), weight: 1 },
    );
  const headerPart = (p: Json) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: validOf(seeds, p.schema ?? {}).map((v) => String(v)), weight: 3 }, { arbitrary: headerJunk, weight: 2 });
  const unknownQuery = fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary: fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 10 })).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`), weight: 1 });
  const method = fc.oneof({ arbitrary: fc.constant(op.method), weight: 12 }, { arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', ...METHODS_ODD), weight: 2 });
  const body = op.body
    ? fc.oneof({ arbitrary: bodyTextOf(seeds, op.body), weight: 9 }, { arbitrary: fc.constant(undefined), weight: 1 })
    : fc.oneof({ arbitrary: fc.constant(undefined), weight: 9 }, { arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => ({ text: JSON.stringify(v) ?? 'null', refused: false })), weight: 1 });
  return fc
    .record({
      method,
      path: fc.tuple(...pathParams.map((p) => pathValue(p).map((v) => [p.name as string, v] as const))),
      query: fc.tuple(...queryParams.map(queryPart), unknownQuery),
      headers: fc.tuple(...headerParams.map((p) => headerPart(p).map((v) => [p.name as string, v] as const))),
      body,
      transport: transportArb,
      auth: authArb,
      junkAuth: headerJunk,
      trailingSlash: fc.oneof({ arbitrary: fc.constant(''), weight: 19 }, { arbitrary: fc.constant('/'), weight: 1 }),
    })
    .map((r) => {
      let path = op.template;
      for (const [name, v] of r.path) path = path.replace(`{${name}}`, v);
      const query = r.query.filter((q): q is string => q !== undefined);
      const headers: Record<string, string> = {};
      for (const [name, v] of r.headers) if (v !== undefined) headers[name.toLowerCase()] = v;
      const auth = authHeader(seeds, r.auth, r.junkAuth);
      if (auth !== undefined) headers.authorization = auth;
      const bytes = r.body === undefined ? undefined : encodeBody(r.body.text, r.transport, headers);
      // the tenant routes refuse deep nesting, and unknown members where their schema is closed
      // (the Hook URL takes any body, JSON-RPC its own members)
      const mustRefuse = r.body?.refused === true && r.method === op.method && op.template.startsWith('/v1/tenants/');
      return { kind: 'api' as const, target: `${op.method} ${op.template}`, method: r.method, path: `${path}${r.trailingSlash}${query.length ? `?${query.join('&')}` : ''}`, headers, body: bytes, mustRefuse };
    });
}

function hookSampleArb(seeds: Seeds): fc.Arbitrary<Sample> {
  const body = fc.oneof(
    { arbitrary: fc.record({ id: fc.uuid(), type: fc.constantFrom('fuzz.event', 'charge.succeeded', 'ping'), data: fc.jsonValue({ maxDepth: 2 }) }).map((o) => Buffer.from(JSON.stringify(o))), weight: 8 },
    { arbitrary: fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)), weight: 1 },
    { arbitrary: fc.constantFrom(0, 1, 300_000, 1_048_576, 1_048_577).map((n) => Buffer.alloc(n, 0x61)), weight: 1 },
    { arbitrary: fc.constant(Buffer.from(deepText(false))), weight: 1 },
  );
  return fc
    .record({
      provider: fc.constantFrom(...PROVIDERS),
      id: fc.oneof({ arbitrary: fc.constant('known'), weight: 12 }, { arbitrary: junkSegment, weight: 1 }),
      signature: fc.oneof({ arbitrary: fc.constant('valid' as const), weight: 6 }, { arbitrary: fc.constantFrom('wrong' as const, 'stale' as const, 'missing' as const), weight: 2 }),
      plain: body,
      encoding: fc.oneof({ arbitrary: fc.constant('none' as const), weight: 8 }, { arbitrary: fc.constantFrom('gzip' as const, 'deflate' as const), weight: 2 }),
      lie: fc.boolean(),
      method: fc.oneof({ arbitrary: fc.constant('POST'), weight: 19 }, { arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', ...METHODS_ODD), weight: 1 }),
      contentType: fc.oneof({ arbitrary: fc.constant('application/json'), weight: 8 }, { arbitrary: fc.constantFrom(...CONTENT_TYPES), weight: 2 }, { arbitrary: fc.constant(undefined), weight: 1 }),
      hops: fc.oneof({ arbitrary: fc.constant(undefined), weight: 8 }, { arbitrary: fc.constantFrom('0', '1', '3', '4', '99', '-1', 'x', '1.5', '', '9'.repeat(30)), weight: 2 }),
      correlationId: fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary: headerJunk, weight: 1 }),
      query: fc.oneof({ arbitrary: fc.constant(''), weight: 8 }, { arbitrary: fc.string({ maxLength: 20 }).map((q) => `?${encodeURIComponent(q)}`), weight: 1 }),
      extraHeaders: fc.oneof({ arbitrary: fc.constant(0), weight: 9 }, { arbitrary: fc.integer({ min: 1, max: 80 }), weight: 1 }),
    })
    .map((r) => {
      const headers: Record<string, string> = {};
      if (r.contentType !== undefined) headers['content-type'] = r.contentType;
      if (r.hops !== undefined) headers['x-hookline-hops'] = r.hops;
      if (r.correlationId !== undefined) headers['x-correlation-id'] = r.correlationId;
      for (let i = 0; i < r.extraHeaders; i++) headers[`x-fuzz-${i}`] = String(i);
      const path = `/v1/hooks/${r.id === 'known' ? seeds.hooks[r.provider] : r.id}${r.query}`;
      const signature = r.provider === 'none' ? ('none' as const) : r.signature;
      return {
        kind: 'hook' as const,
        target: `hook ${r.provider}${r.id === 'known' ? '' : ' (unknown id)'}`,
        method: r.method,
        path,
        headers,
        hook: { provider: r.provider, signature, plain: r.plain, encoding: r.encoding, lie: r.lie && r.encoding !== 'none', correlationId: '' },
      };
    });
}

/** Signs a hook request now (timestamps must be fresh) and encodes its body. */
function finishHook(seeds: Seeds, s: Sample, serial: number): void {
  const h = s.hook!;
  // every accepted webhook is told apart by its correlation id (unless the sample set a junk one)
  h.correlationId = s.headers['x-correlation-id'] ?? `fuzz-${serial}`;
  s.headers['x-correlation-id'] = h.correlationId;
  const secret = seeds.secrets[h.provider];
  const now = Math.floor(Date.now() / 1000);
  // only schemes that sign a timestamp can be stale; for the others a stale signature is a valid one
  if (h.signature === 'stale' && !['stripe', 'slack', 'standard-webhooks'].includes(h.provider)) h.signature = 'valid';
  const ts = h.signature === 'stale' ? now - 3600 : now;
  const key = h.signature === 'wrong' ? `${secret}x` : secret;
  const body = h.plain;
  const hex = (alg: string, data: Buffer | string) => createHmac(alg, key).update(data).digest('hex');
  if (h.signature !== 'missing' && h.signature !== 'none') {
    switch (h.provider) {
      case 'stripe':
        // the library signs text; bytes that are not UTF-8 are signed as bytes
        s.headers['stripe-signature'] = isUtf8(body) ? new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload: body.toString('utf8'), secret: key, timestamp: ts }) : `t=${ts},v1=${createHmac('sha256', key).update(`${ts}.`).update(body).digest('hex')}`;
        break;
      case 'github':
        s.headers['x-hub-signature-256'] = `sha256=${hex('sha256', body)}`;
        break;
      case 'shopify':
        s.headers['x-shopify-hmac-sha256'] = createHmac('sha256', key).update(body).digest('base64');
        break;
      case 'slack':
        s.headers['x-slack-request-timestamp'] = String(ts);
        s.headers['x-slack-signature'] = `v0=${createHmac('sha256', key).update(`v0:${ts}:`).update(body).digest('hex')}`;
        break;
      case 'generic':
        s.headers['x-webhook-signature'] = hex('sha256', body);
        break;
      case 'standard-webhooks': {
        const id = `msg_${serial}`;
        s.headers['webhook-id'] = id;
        s.headers['webhook-timestamp'] = String(ts);
        s.headers['webhook-signature'] = h.signature === 'wrong' ? `v1,${Buffer.from('wrong').toString('base64')}` : new Webhook(secret).sign(id, new Date(ts * 1000), body.toString('utf8'));
        if (!isUtf8(body)) h.signature = 'wrong'; // the library signs text: bytes that are not UTF-8 do not round-trip
        break;
      }
    }
  }
  let bytes = body;
  if (h.encoding !== 'none') {
    s.headers['content-encoding'] = h.encoding;
    if (!h.lie) bytes = h.encoding === 'gzip' ? gzipSync(body) : deflateSync(body);
  }
  s.body = bytes;
}

/** What `a` holds beyond `b`, counting repeats. */
function difference(a: string[], b: string[]): string[] {
  const left = new Map<string, number>();
  for (const x of b) left.set(x, (left.get(x) ?? 0) + 1);
  return a.filter((x) => {
    const n = left.get(x) ?? 0;
    if (n > 0) left.set(x, n - 1);
    return n === 0;
  });
}

/** Violations grouped by kind, with a count and one example each. */
function kinds(violations: { kind: string; text: string }[]): string[] {
  const groups = new Map<string, { n: number; example: string }>();
  for (const v of violations) {
    const g = groups.get(v.kind) ?? { n: 0, example: v.text };
    g.n++;
    groups.set(v.kind, g);
  }
  return [...groups.entries()].sort((a, b) => b[1].n - a[1].n).map(([k, g]) => `${g.n} x ${k}\n      e.g. ${g.example.slice(0, 900)}`);
}

function isUtf8(b: Buffer): boolean {
  return Buffer.from(b.toString('utf8'), 'utf8').equals(b);
}

const ACCEPTS = ['application/json, text/event-stream', 'text/event-stream, application/json', 'application/json', 'text/event-stream', '*/*', 'text/html', 'application/*', '', 'application/json;q=0, text/event-stream'];

function mcpSampleArb(seeds: Seeds): fc.Arbitrary<Sample> {
  const id = fc.oneof(fc.integer({ min: 0, max: 1e6 }), fc.string({ maxLength: 10 }), fc.constant(null));
  const call = fc.record({
    name: fc.oneof({ arbitrary: fc.constantFrom(...seeds.tools.map((t) => t.name)), weight: 8 }, { arbitrary: fc.string({ maxLength: 20 }), weight: 1 }),
    args: fc.oneof(fc.constant({}), fc.dictionary(fc.constantFrom('id', 'tenant_id', 'delivery_id', 'destination_id', 'name', 'url', 'limit', 'cursor', 'event_id', 'ingester_id', 'x'), fc.oneof(fc.constantFrom(...Object.values(seeds.ids).flat()), wrongValue.filter((v) => typeof v !== 'string' || v.length < 10_000)), { maxKeys: 4 })),
  });
  const message = fc.oneof(
    fc.tuple(id, fc.constantFrom('2025-06-18', '2025-03-26', '1999-01-01', '')).map(([i, v]) => ({ jsonrpc: '2.0', id: i, method: 'initialize', params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } })),
    id.map((i) => ({ jsonrpc: '2.0', id: i, method: 'tools/list' })),
    fc.tuple(id, call).map(([i, c]) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: c.name, arguments: c.args } })),
    id.map((i) => ({ jsonrpc: '2.0', id: i, method: 'ping' })),
    fc.constant({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    fc.tuple(id, fc.string({ maxLength: 20 })).map(([i, m]) => ({ jsonrpc: '2.0', id: i, method: m, params: {} })),
    fc.jsonValue({ maxDepth: 2 }),
    fc.record({ jsonrpc: fc.oneof(fc.constant('2.0'), wrongValue), id: fc.oneof(id, wrongValue), method: fc.oneof(fc.constant('tools/list'), wrongValue) }, { requiredKeys: [] }),
  );
  const bodyText = fc.oneof(
    { arbitrary: message.map((m) => JSON.stringify(m) ?? 'null'), weight: 8 },
    { arbitrary: fc.array(message, { minLength: 0, maxLength: 5 }).map((m) => JSON.stringify(m)), weight: 2 },
    { arbitrary: fc.constantFrom('', '{', '[', 'null', deepText(false), deepText(true), JSON.stringify(new Array(200).fill({ jsonrpc: '2.0', method: 'ping', id: 1 }))), weight: 1 },
  );
  return fc
    .record({
      method: fc.oneof({ arbitrary: fc.constant('POST'), weight: 12 }, { arbitrary: fc.constantFrom('GET', 'DELETE', 'PUT', ...METHODS_ODD), weight: 1 }),
      accept: fc.oneof({ arbitrary: fc.constant(ACCEPTS[0]!), weight: 4 }, { arbitrary: fc.constantFrom(...ACCEPTS), weight: 4 }, { arbitrary: fc.constant(undefined), weight: 1 }),
      version: fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary: fc.constantFrom('2025-06-18', '2025-03-26', '2024-11-05', 'x', ''), weight: 2 }),
      session: fc.oneof({ arbitrary: fc.constant(undefined), weight: 9 }, { arbitrary: fc.constantFrom('abc', '', 'x'.repeat(300)), weight: 1 }),
      body: bodyText,
      transport: transportArb,
      auth: authArb,
      junkAuth: headerJunk,
    })
    .map((r) => {
      const headers: Record<string, string> = {};
      if (r.accept !== undefined) headers.accept = r.accept;
      if (r.version !== undefined) headers['mcp-protocol-version'] = r.version;
      if (r.session !== undefined) headers['mcp-session-id'] = r.session;
      const auth = authHeader(seeds, r.auth, r.junkAuth);
      if (auth !== undefined) headers.authorization = auth;
      const body = encodeBody(r.body, r.transport, headers);
      return { kind: 'mcp' as const, target: 'POST /v1/mcp', method: r.method, path: '/v1/mcp', headers, body };
    });
}

/** Requests node:http will not send, as bytes: invalid UTF-8 in the target, broken request lines and headers, huge or many headers. */
function socketSampleArb(seeds: Seeds): fc.Arbitrary<Sample> {
  const auth = `Authorization: Bearer ${seeds.keys.valid}\r\n`;
  const base = `/v1/tenants/${seeds.tenant}`;
  const bad = Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x80]);
  const req = (head: string | Buffer, body = '', protocolInvalid = false): { raw: Buffer; protocolInvalid: boolean } => ({ raw: Buffer.concat([typeof head === 'string' ? Buffer.from(head, 'latin1') : head, Buffer.from(body, 'latin1')]), protocolInvalid });
  const line = (target: Buffer | string, method = 'GET') => Buffer.concat([Buffer.from(`${method} `), Buffer.from(target as any, 'latin1'), Buffer.from(' HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n')]);
  return fc
    .oneof(
      // invalid UTF-8 in the path and the query, on real routes and on the Hook URLs
      fc.constantFrom('/destinations/', '/ingesters/', '/logs?level=', '/deliveries?cursor=', '/delivery-flows/').map((p) => ({ name: 'invalid UTF-8 in target', ...req(Buffer.concat([line(Buffer.concat([Buffer.from(`${base}${p}`), bad])), Buffer.from(`${auth}\r\n`)])) })),
      fc.constant({ name: 'invalid UTF-8 in hook path', ...req(Buffer.concat([line(Buffer.concat([Buffer.from('/v1/hooks/'), bad]), 'POST'), Buffer.from('Content-Length: 2\r\n\r\n{}')])) }),
      fc.constant({ name: 'invalid UTF-8 in tenant', ...req(Buffer.concat([line(Buffer.concat([Buffer.from('/v1/tenants/'), bad, Buffer.from('/destinations')])), Buffer.from(`${auth}\r\n`)])) }),
      // header values with bytes that are not UTF-8 (Latin-1 and broken sequences)
      fc.constantFrom('Authorization: Bearer ', 'Idempotency-Key: ', 'X-Correlation-Id: ', 'Content-Type: application/json; charset=').map((h) => ({ name: 'invalid UTF-8 in header', ...req(Buffer.concat([line(`${base}/destinations`, 'POST'), Buffer.from(auth), Buffer.from(h), bad, Buffer.from('\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}')])) })),
      // a header larger than Node's limit (16 KiB) and very many headers
      fc.integer({ min: 17_000, max: 80_000 }).map((n) => ({ name: 'huge header', ...req(`GET ${base}/destinations HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${auth}X-Big: ${'b'.repeat(n)}\r\n\r\n`, '', true) })),
      fc.integer({ min: 100, max: 3000 }).map((n) => ({ name: 'many headers', ...req(`GET ${base}/destinations HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${auth}${Array.from({ length: n }, (_, i) => `X-H${i}: ${i}\r\n`).join('')}\r\n`, '', n * 12 > 16_000) })),
      // request lines and headers that are not HTTP
      fc.constantFrom(
        'GET  HTTP/1.1\r\n\r\n', 'GET /v1/openapi.json HTTP/9.9\r\n\r\n', 'GET /v1/openapi.json\r\n\r\n', 'garbage\r\n\r\n', '\r\n\r\n', 'GET /v1 /x HTTP/1.1\r\nHost: x\r\n\r\n',
        'GET /v1/openapi.json HTTP/1.1\r\nNoColon\r\n\r\n', 'GET /v1/openapi.json HTTP/1.1\r\nBad Name: x\r\n\r\n', 'GET /v1/openapi.json HTTP/1.1\r\nX: a\u0000b\r\n\r\n',
        'GET /v1/openapi.json HTTP/1.1\r\nX: a\r\n folded\r\n\r\n', 'POST /v1/mcp HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
        'POST /v1/mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'POST /v1/mcp HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
        'POST /v1/mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 'POST /v1/mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}',
        'GET /v1/openapi.json HTTP/1.1\r\n\r\n', 'FROB /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n', 'GET http://evil.example/v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n', 'GET * HTTP/1.1\r\nHost: x\r\n\r\n',
      ).map((text) => ({ name: 'malformed HTTP', ...req(text.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'), '', true) })),
      // HTTP/1.0 without Host, a valid request the other way round
      fc.constant({ name: 'HTTP/1.0', ...req(`GET ${base}/destinations HTTP/1.0\r\n${auth}\r\n`) }),
    )
    .map((r) => ({ kind: 'socket' as const, target: `socket: ${r.name}`, method: 'RAW', path: '', headers: {}, raw: r.raw, protocolInvalid: r.protocolInvalid }));
}

// ---------------------------------------------------------------------------------------------

describe('contract fuzz: requests generated from the OpenAPI document', () => {
  let svc: TestService;
  let receiver: Receiver;
  let seeds: Seeds;
  let ops: Operation[];

  beforeAll(async () => {
    svc = await startTestService({ RATE_LIMITS: 'default=100000000/60s' });
    receiver = await startReceiver();
    const doc = (await (await fetch(`${svc.url}/v1/openapi.json`)).json()) as Json;
    ops = operationsOf(doc);
    const tenant = svc.tenantId;
    const { dest, ingester, flow, payload } = await seedObjects(svc);
    // the Hook URLs live in a tenant of their own, which the API requests never touch
    const hookTenant = `${tenant}-hooks`;
    const hookKey = await svc.newKey([...SCOPES], { tenantId: hookTenant });
    const hookDest = await makeObject(svc, '/destinations', { name: 'fuzz-receiver', url: receiver.url }, { key: hookKey, tenantId: hookTenant });
    const secrets = {} as Record<Provider, string>;
    const hooks = {} as Record<Provider, string>;
    for (const provider of PROVIDERS) {
      const secret = provider === 'standard-webhooks' ? `whsec_${randomBytes(24).toString('base64')}` : provider === 'stripe' ? `whsec_${randomBytes(16).toString('hex')}` : randomBytes(16).toString('hex');
      secrets[provider] = secret;
      hooks[provider] = await makeObject(svc, '/ingesters', { name: `fuzz-${provider}`, provider, config: provider === 'none' ? {} : { signing_secret: secret }, destination_ids: [hookDest] }, { key: hookKey, tenantId: hookTenant });
    }
    const otherTenant = `${tenant}-other`;
    const mcpList = await rawRequest(svc.url, { method: 'POST', path: '/v1/mcp', headers: { authorization: `Bearer ${svc.apiKey}`, accept: ACCEPTS[0]!, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    seeds = {
      doc,
      tenant,
      otherTenant,
      ids: { dst: [dest], ing: [ingester], flw: [flow], pld: [payload], dlv: ['dlv_01jzzzzzzzzzzzzzzzzzzzzzzz'], evt: ['evt_01jzzzzzzzzzzzzzzzzzzzzzzz'] },
      keys: {
        valid: svc.apiKey,
        'other-tenant': await svc.newKey([...SCOPES], { tenantId: otherTenant }),
        'read-only': await svc.newKey(SCOPES.filter((s) => s.startsWith('read:'))),
      },
      hooks,
      secrets,
      tools: (mcpList.body?.result?.tools ?? []) as Seeds['tools'],
    };
    if (seeds.tools.length === 0) throw new Error(`no MCP tools listed: ${mcpList.status} ${mcpList.text.slice(0, 300)}`);
  }, 120_000);

  afterAll(async () => {
    await receiver?.close();
    await svc?.stop();
  });

  it('answers 10,000+ generated requests without a 5xx, every 4xx a problem, and delivers every accepted webhook', async () => {
    const seed = Number(process.env.CONTRACT_FUZZ_SEED ?? 20261125);
    const runs = Math.max(10_000, Number(process.env.CONTRACT_FUZZ_RUNS ?? 10_000));
    const concurrency = 24;
    const errorBase = svc.config.errorBase;
    const started = Date.now();

    // every operation of the document gets its share, the Hook URLs and MCP a larger one
    const arb = fc.oneof(
      ...ops.map((op) => ({ arbitrary: apiSampleArb(seeds, op), weight: 4 })),
      { arbitrary: hookSampleArb(seeds), weight: 40 },
      { arbitrary: mcpSampleArb(seeds), weight: 16 },
      { arbitrary: socketSampleArb(seeds), weight: 10 },
    );
    const samples = fc.sample(arb, { numRuns: runs, seed });

    const statuses = new Map<string, number>();
    const byTarget = new Map<string, number>();
    const bump = (m: Map<string, number>, k: string, n = 1) => m.set(k, (m.get(k) ?? 0) + n);
    const msByTarget = new Map<string, number>();
    const fromParserSeen = new Map<string, number>();
    const violations: { kind: string; text: string }[] = [];
    let serverErrors = 0;
    let problems4xx = 0;
    let parserAnswers = 0;
    let parserDropped = 0;
    const accepted: string[] = [];
    /** Accepted, but with a signature that must fail verification. */
    const refused: string[] = [];
    const summary = (s: Sample) => (s.raw ? `${s.target}: ${JSON.stringify(s.raw.subarray(0, 200).toString('latin1'))}` : `${s.method} ${s.path.slice(0, 200)} ${JSON.stringify(Object.fromEntries(Object.entries(s.headers).map(([k, v]) => [k, v.slice(0, 60)])))} body=${s.body ? JSON.stringify(s.body.subarray(0, 160).toString('latin1')) : '(none)'}${s.body && s.body.length > 160 ? `…(${s.body.length})` : ''}`);

    const check = (s: Sample, res: RawAnswer | Error) => {
      bump(byTarget, s.target);
      if (res instanceof Error) {
        // a request that is not HTTP may be dropped by Node's parser when it cannot answer
        if (s.protocolInvalid) {
          parserDropped++;
          bump(statuses, 'closed by the HTTP parser');
        } else {
          violations.push({ kind: `no answer on ${s.target}`, text: `no answer (${res.message}) <- ${summary(s)}` });
          bump(statuses, 'no answer');
        }
        return;
      }
      bump(statuses, String(res.status));
      const faults: string[] = [];
      if (res.status >= 500) {
        serverErrors++;
        faults.push(`server error ${res.status}`);
      } else if (res.status >= 400) {
        const v = problemViolations(res, errorBase, { head: s.method === 'HEAD' });
        // Node's own HTTP server answers a few requests that are not valid HTTP/1.1 before any
        // of the service's code runs (an HTTP/1.1 request without Host gets a bare 400; the
        // service's clientError handler answers the parser's other refusals as problems): those
        // alone are not problem documents, accepted only for requests generated as
        // protocol-invalid, without a body and without the service's X-Request-Id
        const fromParser = s.protocolInvalid && res.headers['x-request-id'] === undefined && [400, 431, 505].includes(res.status) && !res.text;
        if (fromParser) {
          parserAnswers++;
          bump(fromParserSeen, `${res.status} to ${JSON.stringify(s.raw?.subarray(0, 60).toString('latin1') ?? s.target)}`);
        }
        else if (v.length) faults.push(...v);
        else problems4xx++;
      } else if (res.status < 200 || res.status >= 300) faults.push(`unexpected status ${res.status}`);
      else if (s.mustRefuse) faults.push(`accepted a body its schema refuses (an unknown member) or nested too deep (${res.status})`);
      if (s.kind === 'hook' && s.method === 'POST' && res.status >= 200 && res.status < 300) {
        const h = s.hook!;
        // the sender's correlation id, or one of the service's own when it sent none usable
        const correlationId = res.body?.correlation_id;
        if (typeof correlationId !== 'string' || correlationId === '') faults.push('accepted without a correlation id');
        // verified webhooks go on to the receiver; the rest stop at verification
        else if (h.signature === 'valid' || h.signature === 'none') accepted.push(correlationId);
        else refused.push(correlationId);
      }
      if (faults.length) violations.push({ kind: `${res.status} ${faults[0]!.replace(/"[^"]*"|\d+/g, '…')} on ${s.target}`, text: `${faults.join('; ')} <- ${summary(s)} -> ${res.status} ${res.text.slice(0, 300)}` });
    };

    let next = 0;
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= samples.length) return;
        const s = samples[i]!;
        if (s.kind === 'hook') finishHook(seeds, s, i);
        const t0 = Date.now();
        const answer = await (s.raw ? socketRequest(svc.url, s.raw, 20_000) : rawRequest(svc.url, { method: s.method, path: s.path, headers: s.headers, body: s.body }, 20_000)).catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
        bump(msByTarget, s.target, Date.now() - t0);
        check(s, answer);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const sentMs = Date.now() - started;

    // every verified webhook reaches the receiver, once; none that failed verification does
    const deliveredIds = () => new Map(receiver.requests.map((r) => [String(r.headers['webhook-id']), String(r.headers['x-correlation-id'])]));
    await eventually('deliveries of the accepted webhooks', async () => (deliveredIds().size >= accepted.length ? true : undefined), 90_000, 250).catch(() => undefined);
    // a moment for anything beyond the expected to show
    await new Promise((r) => setTimeout(r, 2000));
    const delivered = [...deliveredIds().values()].sort();
    const expected = [...accepted].sort();
    const elapsed = Date.now() - started;

    const missing = difference(expected, delivered);
    const extra = difference(delivered, expected);
    const health = await rawRequest(svc.url, { method: 'GET', path: '/v1/mcp/health' });
    const fmt = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}: ${v}`).join(', ');
    process.stderr.write(
      [
        `\ncontract fuzz: ${samples.length} requests in ${sentMs} ms, ${elapsed} ms with deliveries (seed ${seed}, concurrency ${concurrency}; CONTRACT_FUZZ_SEED to repeat)`,
        `  5xx: ${serverErrors}; 4xx problem documents: ${problems4xx}; answered or dropped by Node's HTTP parser: ${parserAnswers} / ${parserDropped}`,
        `  webhooks accepted with a valid signature: ${expected.length}; delivered: ${delivered.length}`,
        `  statuses: ${fmt(statuses)}`,
        `  targets: ${fmt(byTarget)}`,
        `  answers of Node's parser: ${fmt(fromParserSeen)}`,
        `  slowest targets (total ms): ${fmt(msByTarget).split(', ').slice(0, 8).join(', ')}`,
        `  health afterwards: ${health.status}`,
        ...(missing.length || extra.length ? [`  not delivered: ${missing.slice(0, 20).join(' ')}`, `  delivered beyond the expected: ${extra.slice(0, 20).join(' ')} (of them accepted with a bad signature: ${extra.filter((c) => refused.includes(c)).length})`] : []),
        ...(violations.length ? [`  ${violations.length} violations, by kind:`, ...kinds(violations).map((v) => `    ${v}`)] : []),
        '',
      ].join('\n'),
    );

    expect(samples.length).toBeGreaterThanOrEqual(10_000);
    expect(serverErrors).toBe(0);
    expect(violations.map((v) => v.text)).toEqual([]);
    expect(delivered).toEqual(expected);
    expect(expected.length).toBeGreaterThan(100);
    // every operation of the document was aimed at, and errors and successes both happened
    for (const op of ops) expect(byTarget.get(`${op.method} ${op.template}`) ?? 0).toBeGreaterThan(0);
    for (const status of ['200', '201', '202', '400', '401', '404']) expect(statuses.get(status) ?? 0).toBeGreaterThan(0);
    expect(health.status).toBe(200);
    expect((await svc.api('GET', `/v1/tenants/${seeds.tenant}/destinations?limit=1`)).status).toBe(200);
  }, 300_000);
});
