import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { newId } from '../../core/ids';
import { decodeStoredBody } from '../../core/stored-body';
import { signStandardWebhook } from '../../core/signing/standard-webhooks';
import type { BodyKey, BodyKeys } from '../../core/secrets/body-seal';
import { AvroCodec } from '../../platform/avro/codec';
import type { DeliveryTask, WebhookEvent } from '../../platform/avro/records';
import { createProducer } from '../../platform/kafka/client';
import { readTopic } from '../../platform/kafka/topic-table';
import { filesUnder, foundInFileList, hex } from '../support/at-rest';
import { attemptsOf, waitForStates } from '../support/flow';
import { receiverPool, type ReceivedRequest, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';


/** The directories under `dir` whose name starts with `prefix` (a broker keeps each partition's log in `<topic>-<partition>`). */
function dirsNamed(dir: string, prefix: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (!e.isDirectory()) return [];
    const p = path.join(dir, e.name);
    return e.name.startsWith(prefix) ? [p] : dirsNamed(p, prefix);
  });
}


const metricOf = async (svc: TestService, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await (await fetch(`${svc.url}/metrics`)).text())?.[1] ?? NaN);

/**
 * Webhook bodies on Kafka are sealed with their tenant's data key: sent through Hook URLs (one
 * provider-signed, one binary, one that fails through a delay tier into the dead letters and is
 * then retried), every body reaches its destination byte for byte with a valid signature, while
 * every record of the run's topics carries its body sealed (`body_key` set) and no log segment of
 * them holds a body in clear. A record whose body does not open is dropped and counted.
 */
describe('webhook bodies sealed at rest on Kafka', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let ok: Receiver;
  let flaky: Receiver;
  let stopped = false;

  beforeAll(async () => {
    [svc, ok, flaky] = await Promise.all([startTestService({ RETRY_SCHEDULE: '0,100ms', RETRY_TIERS: '100ms', BREAKER_MIN_ATTEMPTS: '1000' }), receivers.next(), receivers.next()]);
  });
  afterAll(async () => {
    await receivers.closeAll();
    if (!stopped) await svc?.service.stop().catch(() => undefined);
    if (svc) rmSync(svc.config.dataDir, { recursive: true, force: true });
  });

  it('delivers every body byte for byte, verified and signed, while Kafka holds each only sealed', async () => {
    const base = `/v1/tenants/${svc.tenantId}`;
    const marker = `sealed-${hex()}`;
    const headerMarker = `hdr-${hex()}`;
    const post = async (path_: string, body: unknown, status = 201) => {
      const res = await svc.api('POST', `${base}${path_}`, body);
      expect(res.status).toBe(status);
      return res.body;
    };
    const okDest = await post('/destinations', { name: 'sealed ok', url: ok.url });
    const flakyDest = await post('/destinations', { name: 'sealed flaky', url: flaky.url });
    const open = await post('/ingesters', { name: 'sealed open', provider: 'none', config: {}, destination_ids: [okDest.id] });
    const signingSecret = `gen-${hex()}`;
    const signed = await post('/ingesters', { name: 'sealed signed', provider: 'generic', config: { signing_secret: signingSecret, header: 'x-signature' }, destination_ids: [okDest.id] });
    const retried = await post('/ingesters', { name: 'sealed retried', provider: 'none', config: {}, destination_ids: [flakyDest.id] });

    const bodies = {
      plain: Buffer.from(JSON.stringify({ marker: `${marker}-plain`, items: [1, 2, 3] })),
      binary: Buffer.concat([Buffer.from(`${marker}-binary:`), randomBytes(200), Buffer.from([0, 255, 13, 10])]),
      signed: Buffer.from(JSON.stringify({ marker: `${marker}-signed` })),
      forged: Buffer.from(JSON.stringify({ marker: `${marker}-forged` })),
      retried: Buffer.from(JSON.stringify({ marker: `${marker}-retried` })),
    };
    const send = async (ingesterId: string, body: Buffer, headers: Record<string, string> = {}) => {
      const res = await fetch(`${svc.url}/v1/hooks/${ingesterId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-marker': headerMarker, ...headers }, body });
      expect(res.status).toBe(202);
      return ((await res.json()) as { event_id: string }).event_id;
    };
    const hmac = (body: Buffer) => createHmac('sha256', signingSecret).update(body).digest('hex');
    // the retried body fails its two attempts (the second through the delay tier) and lands in the dead letters
    flaky.respondWith(500);
    const events = {
      plain: await send(open.id, bodies.plain),
      binary: await send(open.id, bodies.binary, { 'content-type': 'application/octet-stream' }),
      signed: await send(signed.id, bodies.signed, { 'x-signature': hmac(bodies.signed) }),
      forged: await send(signed.id, bodies.forged, { 'x-signature': hmac(Buffer.from('something else')) }),
      retried: await send(retried.id, bodies.retried),
    };

    // validate verified the provider signature over the opened body: the forged one went no further
    await waitForStates(svc, events.signed, ['validated', 'delivered']);
    const forged = await waitForStates(svc, events.forged, ['failed']);
    expect(forged.map((r) => r.state)).not.toContain('validated');
    const attempts = await eventually('the retried body dead after two attempts', async () => {
      const rows = await attemptsOf(svc, events.retried);
      return rows.length === 2 && rows[1]!.status === 'failed' ? rows : undefined;
    });
    // retried from the dead letters (the API queues it again from the stored event)
    flaky.respondWith(200);
    const retry = await svc.api('POST', `${base}/events/${events.retried}/retry`);
    expect(retry.status).toBe(202);

    const okGot = await ok.waitForRequests(3);
    const flakyGot = await flaky.waitForRequests(3);
    const checkSigned = (r: ReceivedRequest) => {
      const id = String(r.headers['webhook-id']);
      const expected = signStandardWebhook(okDest.signing_secret as string, id, Number(r.headers['webhook-timestamp']), r.body);
      expect(String(r.headers['webhook-signature']).split(' ')).toContain(expected);
    };
    for (const name of ['plain', 'binary', 'signed'] as const) {
      const got = okGot.filter((r) => r.body.equals(bodies[name]));
      expect({ name, delivered: got.length }).toEqual({ name, delivered: 1 });
      checkSigned(got[0]!);
    }
    expect(okGot.some((r) => r.body.includes(Buffer.from(`${marker}-forged`)))).toBe(false);
    expect(flakyGot.map((r) => r.body.equals(bodies.retried))).toEqual([true, true, true]);
    for (const r of flakyGot) {
      const expected = signStandardWebhook(flakyDest.signing_secret as string, String(r.headers['webhook-id']), Number(r.headers['webhook-timestamp']), r.body);
      expect(String(r.headers['webhook-signature']).split(' ')).toContain(expected);
    }
    expect(String(flakyGot[2]!.headers['webhook-id'])).not.toBe(attempts[0]!.delivery_id);
    // the time the sealing took is on /metrics
    expect(await metricOf(svc, 'hookline_body_sealing_seconds_total')).toBeGreaterThan(0);

    // ClickHouse keeps the bodies as received (the search reads them), opened by the sink
    const storedBodies = await eventually('every body in ClickHouse', async () => {
      const rs = await svc.clickhouse.query({ query: `SELECT event_id, body, body_sha256 FROM ${svc.config.clickhouseDatabase}.events WHERE event_id IN {ids:Array(String)}`, query_params: { ids: Object.values(events) }, format: 'JSONEachRow' });
      const rows = await rs.json<{ event_id: string; body: string; body_sha256: string }>();
      return rows.length === 5 ? new Map(rows.map((r) => [r.event_id, decodeStoredBody(r.body, r.body_sha256)])) : undefined;
    });
    for (const [name, id] of Object.entries(events)) expect({ name, same: storedBodies.get(id)?.equals(bodies[name as keyof typeof bodies]) }).toEqual({ name, same: true });

    // the raw records, read with a plain consumer and a codec without keys: every body sealed under the tenant's key
    const [dataKey] = svc.service.store.list('data_key', svc.tenantId);
    expect(dataKey?.id).toMatch(/^dk_/);
    const plain = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    const ours = new Set(Object.values(events));
    const topics = svc.service.topics;
    const sealedOn = async (topic: string, record: 'WebhookEvent' | 'DeliveryTask') => {
      const found: (WebhookEvent | DeliveryTask)[] = [];
      for (const r of await readTopic(svc.service.kafka, topic)) {
        const value = await plain.decodeStored(record, r.value!);
        if (ours.has(value.event_id)) found.push(value);
      }
      for (const v of found) {
        expect({ topic, event: v.event_id, body_key: v.body_key }).toEqual({ topic, event: v.event_id, body_key: dataKey!.id });
        expect(v.body.includes(Buffer.from(marker))).toBe(false);
      }
      return found.length;
    };
    expect(await sealedOn(topics.received, 'WebhookEvent')).toBe(5);
    // the validated and filtered records carry no body at all (the chain handed the event on in memory)
    const bodilessOn = async (topic: string) => {
      const found: WebhookEvent[] = [];
      for (const r of await readTopic(svc.service.kafka, topic)) {
        const value = await plain.decodeStored('WebhookEvent', r.value!);
        if (ours.has(value.event_id)) found.push(value);
      }
      for (const v of found) expect({ topic, event: v.event_id, bytes: v.body.length, body_key: v.body_key ?? null }).toEqual({ topic, event: v.event_id, bytes: 0, body_key: null });
      return found.length;
    };
    expect(await bodilessOn(topics.validated)).toBe(4);
    expect(await bodilessOn(topics.filtered)).toBe(4);
    expect(await sealedOn(topics.deliveryRequested, 'DeliveryTask')).toBeGreaterThanOrEqual(5);
    expect(await sealedOn(topics.retryTiers[0]!.topic, 'DeliveryTask')).toBeGreaterThanOrEqual(1);
    expect(await sealedOn(topics.deliveryDlq, 'DeliveryTask')).toBe(1);

    // the log segments of the run's topics, and the service's files besides ClickHouse's, hold no body in clear
    await svc.service.stop();
    stopped = true;
    const kafkaDir = path.join(process.env.HOOKLINE_TEST_DIR!, 'kafka');
    const segments = dirsNamed(kafkaDir, svc.config.topicPrefix).flatMap(filesUnder);
    expect(segments.filter((f) => f.endsWith('.log')).length).toBeGreaterThan(10);
    const others = readdirSync(svc.config.dataDir).filter((e) => e !== 'clickhouse').flatMap((e) => filesUnder(path.join(svc.config.dataDir, e)));
    const needles = [...Object.values(bodies), Buffer.from(marker)];
    const { found } = foundInFileList([...segments, ...others], [...needles, Buffer.from(headerMarker)]);
    // the same files do hold what is not sealed: the check reads the right bytes
    expect(found.has(headerMarker)).toBe(true);
    expect(needles.map((n) => n.toString('latin1')).filter((n) => found.has(n))).toEqual([]);
  }, 120_000);
});

describe('a record whose body does not open', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let ok: Receiver;

  beforeAll(async () => {
    [svc, ok] = await Promise.all([startTestService(), receivers.next()]);
  });
  afterAll(async () => {
    await receivers.closeAll();
    await svc?.stop();
  });

  it('is dropped with one log line and counted, and the partition goes on', async () => {
    const base = `/v1/tenants/${svc.tenantId}`;
    const dest = await svc.api('POST', `${base}/destinations`, { name: 'after', url: ok.url });
    const ing = await svc.api('POST', `${base}/ingesters`, { name: 'after in', provider: 'none', config: {}, destination_ids: [dest.body.id] });
    const before = await metricOf(svc, 'hookline_sealed_bodies_unopenable_total');
    expect(Number.isFinite(before)).toBe(true);

    // an event sealed under a key the tenant does not have (a key destroyed with its tenant looks the same)
    const gone: BodyKey = { id: 'dk_gone', key: randomBytes(32) };
    const keys: BodyKeys = { current: () => gone, ensure: async () => gone, byId: () => gone, find: async () => gone };
    const forger = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    await forger.register({ [svc.service.topics.received]: 'WebhookEvent' });
    forger.sealBodies(keys);
    const lost: WebhookEvent = {
      event_id: newId('event'), tenant_id: svc.tenantId, ingester_id: ing.body.id, correlation_id: 'cor_lost', received_at: Date.now(), method: 'POST', query: '',
      headers: [], content_type: 'application/json', body: Buffer.from('{"lost":true}'), source_ip: null, event_type: null, hops: 0,
    };
    const producer = createProducer(svc.service.kafka);
    await producer.connect();
    try {
      await producer.send({ topic: svc.service.topics.received, acks: -1, messages: [{ key: `${svc.tenantId}/${ing.body.id}`, value: await forger.encode(svc.service.topics.received, 'WebhookEvent', lost) }] });
    } finally {
      await producer.disconnect();
    }
    // the chain and the sink both read it: each drops it once
    await eventually('both readers dropped it', async () => ((await metricOf(svc, 'hookline_sealed_bodies_unopenable_total')) === before + 2 ? true : undefined));
    const next = await fetch(`${svc.url}/v1/hooks/${ing.body.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"next":true}' });
    expect(next.status).toBe(202);
    const [got] = await ok.waitForRequests(1);
    expect(got!.body.toString()).toBe('{"next":true}');
    // no dead letter keeps it, and no row names it
    const letters = await Promise.all((await readTopic(svc.service.kafka, svc.service.topics.eventsDlq)).map((r) => forger.decode('DeadLetter', r.value!)));
    expect(letters.filter((l) => l.event_id === lost.event_id)).toEqual([]);
    const rows = await svc.clickhouse.query({ query: `SELECT count() AS n FROM ${svc.config.clickhouseDatabase}.events WHERE event_id = {id:String}`, query_params: { id: lost.event_id }, format: 'JSONEachRow' });
    expect(Number((await rows.json<{ n: string }>())[0]!.n)).toBe(0);
    expect(await metricOf(svc, 'hookline_sealed_bodies_unopenable_total')).toBe(before + 2);
  }, 90_000);
});
