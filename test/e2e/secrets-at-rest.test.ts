import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { foundInClickHouse, foundInFiles, foundInRedis, hex } from '../support/at-rest';
import { attemptsOf, waitForStates } from '../support/flow';
import { receiverPool, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

describe('secrets at rest: a copy of the data holds none', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let receiver: Receiver;

  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService(), receivers.next()]);
  });
  afterAll(async () => {
    await receivers.closeAll();
    await svc?.service.stop().catch(() => undefined);
    if (svc) rmSync(svc.config.dataDir, { recursive: true, force: true });
  });

  it('seals provider, destination, credential, idempotency and inbound credential secrets everywhere the service writes', async () => {
    const base = `/v1/tenants/${svc.tenantId}`;
    const secrets: string[] = [];
    const marker = `visible-${hex()}`;

    // destinations: one per kind of credentials, one without, each created with an Idempotency-Key
    const auths = {
      basic: { type: 'basic', username: `user-${hex(4)}`, password: `pw-${hex()}` },
      bearer: { type: 'bearer', token: `tok-${hex()}` },
      header: { type: 'header', name: 'X-Api-Key', value: `hv-${hex()}` },
      none: null,
    } as const;
    const destinations: Record<string, { id: string; name: string }> = {};
    for (const [kind, auth] of Object.entries(auths)) {
      const name = `${marker}-${kind}`;
      const res = await svc.api('POST', `${base}/destinations`, { name, url: `${receiver.url}?d=${kind}`, auth }, { headers: { 'idempotency-key': `create-${kind}` } });
      expect(res.status).toBe(201);
      expect(res.body.signing_secret).toMatch(/^whsec_/);
      secrets.push(res.body.signing_secret as string);
      destinations[kind] = { id: res.body.id as string, name };
      // replayed from Redis, where the answer (with its signing secret) is kept sealed
      const again = await svc.api('POST', `${base}/destinations`, { name, url: `${receiver.url}?d=${kind}`, auth }, { headers: { 'idempotency-key': `create-${kind}` } });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body.signing_secret).toBe(res.body.signing_secret);
    }
    secrets.push(auths.basic.password, auths.bearer.token, auths.header.value);

    // shown masked on every read
    const shown = await svc.api('GET', `${base}/destinations/${destinations.basic!.id}`);
    expect(shown.body.auth).toEqual({ type: 'basic', username: auths.basic.username, password: `****${auths.basic.password.slice(-4)}` });
    expect((await svc.api('GET', `${base}/destinations/${destinations.header!.id}`)).body.auth).toEqual({ type: 'header', name: 'x-api-key', value: `****${auths.header.value.slice(-4)}` });

    // an ingester of every provider that has secrets, one with a secret list and an extra secret member
    const whsec = () => `whsec_${randomBytes(24).toString('base64')}`;
    const providerSecrets: Record<string, Record<string, unknown>> = {
      generic: { signing_secret: `gen-${hex()}`, header: 'x-signature', api_token: `extra-${hex()}` },
      stripe: { signing_secrets: [`whsec_stripe${hex()}`, `whsec_stripe${hex()}`] },
      github: { signing_secret: `gh-${hex()}` },
      shopify: { signing_secret: `shp-${hex()}` },
      slack: { signing_secret: `slk-${hex()}` },
      'standard-webhooks': { signing_secret: whsec() },
    };
    const ingesters: Record<string, string> = {};
    for (const [provider, config] of Object.entries(providerSecrets)) {
      const res = await svc.api('POST', `${base}/ingesters`, { name: `${marker}-${provider}`, provider, config, destination_ids: [destinations.none!.id] }, { headers: { 'idempotency-key': `ing-${provider}` } });
      expect(res.status).toBe(201);
      ingesters[provider] = res.body.id as string;
      for (const [k, v] of Object.entries(config)) {
        if (!/secret|token/.test(k)) continue;
        secrets.push(...(Array.isArray(v) ? (v as string[]) : [v as string]));
      }
    }
    const open = await svc.api('POST', `${base}/ingesters`, { name: `${marker}-open`, provider: 'none', config: {}, destination_ids: Object.values(destinations).map((d) => d.id) });
    expect(open.status).toBe(201);

    // webhooks: one signed through the generic ingester, one carrying a sender's credentials
    const inbound = { authorization: `Bearer in-${hex()}`, 'proxy-authorization': `Basic px-${hex()}`, cookie: `session=ck-${hex()}` };
    secrets.push(...Object.values(inbound));
    const hookMarker = `hdr-${hex()}`;
    const sent = await fetch(`${svc.url}/v1/hooks/${open.body.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-marker': hookMarker, ...inbound },
      body: JSON.stringify({ marker }),
    });
    expect(sent.status).toBe(202);
    const openEvent = ((await sent.json()) as { event_id: string }).event_id;
    const signedBody = Buffer.from(JSON.stringify({ signed: marker }));
    const genericSecret = providerSecrets.generic!.signing_secret as string;
    const signed = await fetch(`${svc.url}/v1/hooks/${ingesters.generic}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-signature': createHmac('sha256', genericSecret).update(signedBody).digest('hex') },
      body: signedBody,
    });
    expect(signed.status).toBe(202);
    const signedEvent = ((await signed.json()) as { event_id: string }).event_id;

    // each delivery carries its destination's credentials; the open one, none
    const got = await receiver.waitForRequests(5);
    const byDest = (kind: string) => got.filter((r) => r.url.endsWith(`?d=${kind}`));
    expect(byDest('basic')[0]!.headers.authorization).toBe(`Basic ${Buffer.from(`${auths.basic.username}:${auths.basic.password}`).toString('base64')}`);
    expect(byDest('bearer')[0]!.headers.authorization).toBe(`Bearer ${auths.bearer.token}`);
    expect(byDest('header')[0]!.headers['x-api-key']).toBe(auths.header.value);
    for (const r of byDest('none')) expect(r.headers.authorization).toBeUndefined();
    expect(byDest('none')).toHaveLength(2);

    // the sink has stored both events and every attempt
    await waitForStates(svc, openEvent, ['received', 'delivered']);
    await waitForStates(svc, signedEvent, ['received', 'validated', 'delivered']);
    await eventually('every attempt in ClickHouse', async () => ((await attemptsOf(svc, openEvent)).length >= 4 ? true : undefined));
    await eventually('the headers in ClickHouse', async () => {
      const rs = await svc.clickhouse.query({ query: `SELECT headers FROM ${svc.config.clickhouseDatabase}.events WHERE event_id = {id:String}`, query_params: { id: openEvent }, format: 'JSONEachRow' });
      return (await rs.json<{ headers: string }>())[0];
    });

    const kek = svc.config.secrets.kek!.split(':')[1]!;
    const needles = [...secrets, kek];
    const controls = { name: destinations.basic!.name, header: hookMarker };

    // ClickHouse: every String column of every table, while the engine is open
    const ch = await foundInClickHouse(svc, [...needles, controls.header, '[redacted]']);
    expect(ch.columns).toBeGreaterThan(10);
    expect(ch.found.has(controls.header)).toBe(true); // the search sees what the service stored
    expect(needles.filter((n) => ch.found.has(n))).toEqual([]);
    expect(ch.found.has('[redacted]')).toBe(true);

    // Redis: every key under the deployment's prefix, its name and its value
    const redis = new Redis(svc.config.redisUrl!);
    try {
      const r = await foundInRedis(redis, svc.config.topicPrefix, [...needles, controls.name.toLowerCase()]);
      expect(r.keys.some((k) => k.includes(':idem:') || k.includes('idem:'))).toBe(true);
      expect(r.found.has(controls.name.toLowerCase())).toBe(true);
      expect(needles.filter((n) => r.found.has(n))).toEqual([]);
    } finally {
      redis.disconnect();
    }

    await svc.service.stop();

    // files: the service's DATA_DIR and the broker's and Redis's data directories
    const testDir = process.env.HOOKLINE_TEST_DIR!;
    const dirs = [svc.config.dataDir, path.join(testDir, 'kafka'), path.join(testDir, 'redis')];
    expect(existsSync(path.join(testDir, 'kafka'))).toBe(true);
    const files = foundInFiles(dirs, [...needles, controls.name]);
    expect(files.files).toBeGreaterThan(10);
    expect(files.found.get(controls.name)).toContain(`${path.sep}kafka${path.sep}`);
    expect(needles.filter((n) => files.found.has(n)).map((n) => `${n.slice(0, 6)}… in ${files.found.get(n)}`)).toEqual([]);
    expect(readFileSync(path.join(svc.config.dataDir, 'evidence', 'signing-key'), 'utf8')).toMatch(/^enc:v1:/);
  }, 180_000);
});
