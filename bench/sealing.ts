/**
 * What sealing webhook bodies on Kafka costs one delivered event: µs per seal and per open of a
 * 1 KiB body as the codec runs them (core/secrets/body-seal.ts: the record copied, the body
 * sealed or opened with the day's subkey of the tenant's data key, XChaCha20-Poly1305 at that
 * size), times the seals and opens one
 * delivered event takes, counted in a whole service run in this process on the bench's
 * infrastructure (ingest, validate -> filter -> route, deliver, sink). The bench report
 * (bench/run.ts, scenario `sealing`) sets that against the service's CPU per delivered event.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../core/config';
import { Logger } from '../core/log';
import { SCOPES } from '../core/scopes';
import { BodySealer, bodySealings, openBody, sealBody, XCHACHA_MAX_BYTES, type BodyKey, type BodyKeys } from '../core/secrets/body-seal';
import { ensureTenant, issueApiKey } from '../platform/config-store/tenants';
import { startService } from '../service/service';
import { taggedBody } from './lib/load';
import { RUN_KEK, type Infra, type ReceiverClient } from './lib/service';
import { median, round, sleep } from './lib/stats';

/**
 * CPU µs per seal and per open of a body of `bytes`, median of `reps` rounds of `runs` each, on
 * this thread: CPU time (process.cpuUsage), as the service's CPU per event is, so that other
 * processes on a busy machine do not count.
 */
export function sealOpenCost(bytes = 1024, runs = 20_000, reps = 5): { sealUs: number; openUs: number } {
  const key: BodyKey = { id: 'dk_bench', key: Buffer.alloc(32, 7) };
  const keys: BodyKeys = { current: () => key, ensure: async () => key, byId: () => key, find: async () => key };
  const sealer = new BodySealer(keys);
  // another process's sealer: it has not seen these bodies, so each open runs the cipher
  const opener = new BodySealer(keys);
  const record = (i: number) => ({ event_id: `evt_${i}`, tenant_id: 'tenant-bench', received_at: Date.now(), body: Buffer.alloc(bytes, 0x61), body_key: null });
  const seal: number[] = [];
  const open: number[] = [];
  for (let rep = 0; rep <= reps; rep++) {
    // a new body each time: one written again would carry its sealed bytes and cost nothing
    const records = Array.from({ length: runs }, (_, i) => record(i));
    const c0 = process.cpuUsage();
    const sealed = records.map((r) => sealer.sealNow(r)!);
    const c1 = process.cpuUsage(c0);
    for (const s of sealed) opener.openNow(s);
    const c2 = process.cpuUsage(c0);
    // the first round warms the JIT and is not counted
    if (rep === 0) continue;
    const sealCpu = c1.user + c1.system;
    seal.push(sealCpu / runs);
    open.push((c2.user + c2.system - sealCpu) / runs);
  }
  return { sealUs: round(median(seal), 2), openUs: round(median(open), 2) };
}

/** CPU µs per seal and per open of one body of each size in each format, XChaCha20-Poly1305 (2) and AES-256-GCM (1). */
export interface FormatCost {
  bytes: number;
  xchacha_seal_us: number;
  xchacha_open_us: number;
  gcm_seal_us: number;
  gcm_open_us: number;
  /** The format the sealer picks at this size. */
  sealed_as: 1 | 2;
}

/**
 * Both formats side by side on bodies of 1 to 64 KiB, through sealBody and openBody alone (no
 * sealer, no kept bodies): where AES-GCM's cipher context stops costing more than ChaCha20's
 * slower stream, which is where the sealer switches (XCHACHA_MAX_BYTES). Medians of `reps` rounds.
 */
export function formatCosts(sizes = [1024, 4096, 8192, 16384, 65536], reps = 5): FormatCost[] {
  const key: BodyKey = { id: 'dk_bench', key: Buffer.alloc(32, 7) };
  const place = { tenant_id: 'tenant-bench', event_id: 'evt_bench', received_at: Date.now() };
  const cpu = (f: () => void, runs: number) => {
    const c0 = process.cpuUsage();
    f();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / runs;
  };
  return sizes.map((bytes) => {
    // about 32 MiB through each format per round, at least 2,000 bodies; the latest 256 sealed are kept and opened in turn
    const runs = Math.max(2_000, Math.round((32 * 1024 * 1024) / bytes));
    const body = Buffer.alloc(bytes, 0x61);
    const figures = ([2, 1] as const).map((format) => {
      const seal: number[] = [];
      const open: number[] = [];
      const ring: Buffer[] = new Array(256);
      for (let rep = 0; rep <= reps; rep++) {
        const s = cpu(() => {
          for (let i = 0; i < runs; i++) ring[i & 255] = sealBody(key, place, body, format);
        }, runs);
        const o = cpu(() => {
          for (let i = 0; i < runs; i++) openBody(key, place, ring[i & 255]!);
        }, runs);
        // the first round warms the JIT and is not counted
        if (rep === 0) continue;
        seal.push(s);
        open.push(o);
      }
      return { seal: round(median(seal), 2), open: round(median(open), 2) };
    });
    return { bytes, xchacha_seal_us: figures[0]!.seal, xchacha_open_us: figures[0]!.open, gcm_seal_us: figures[1]!.seal, gcm_open_us: figures[1]!.open, sealed_as: bytes <= XCHACHA_MAX_BYTES ? 2 : 1 };
  });
}

/**
 * Seals and opens per delivered event: `events` 1 KiB webhooks through one flow of a service
 * running every stage in this process, counted from the first accepted to the last stored in
 * ClickHouse (the sink opens the bodies it stores).
 */
export async function sealingsPerEvent(opts: { infra: Infra; root: string; rec: ReceiverClient; events: number; logLevel: string }): Promise<{ seals: number; opens: number }> {
  const dataDir = path.join(opts.root, 'svc-sealing-count');
  mkdirSync(dataDir, { recursive: true });
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['CLICKHOUSE_URL', 'PUBLIC_BASE_URL', 'ERROR_BASE', 'CLICKHOUSE_DATABASE', 'STAGES']) delete env[name];
  const config = loadConfig({
    ...env,
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    TOPIC_PREFIX: 'bench9.',
    KAFKA_BROKERS: opts.infra.brokers.join(','),
    KAFKA_REPLICATION_FACTOR: '1',
    KAFKA_PARTITIONS: '3',
    REDIS_URL: opts.infra.redisUrl,
    SCHEMA_REGISTRY_URL: opts.infra.registryUrl,
    BOOTSTRAP_DEMO_TENANT: 'false',
    LOG_LEVEL: opts.logLevel === 'debug' ? 'debug' : 'warn',
    DESTINATION_ALLOWED_NETWORKS: 'loopback',
    INGEST_RATE_LIMIT_PER_HOOK: '100000000/60s',
    INGEST_RATE_LIMIT_PER_TENANT: '100000000/60s',
    SECRETS_KEK: RUN_KEK,
  });
  const service = await startService(config, new Logger(config.logLevel));
  try {
    await ensureTenant(service.store, 'sealing');
    const key = (await issueApiKey(service.store, 'sealing', [...SCOPES])).api_key;
    const call = async (pathname: string, body: unknown) => {
      const res = await fetch(`${service.url!}${pathname}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (res.status !== 201) throw new Error(`${pathname}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string };
    };
    const dest = await call('/v1/tenants/sealing/destinations', { name: 'sealing receiver', url: opts.rec.hookUrl });
    const ing = await call('/v1/tenants/sealing/ingesters', { name: 'sealing in', provider: 'none', config: {}, destination_ids: [dest.id] });
    const send = async (run: string, seq: number) => {
      const res = await fetch(`${service.url!}/v1/hooks/${ing.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: taggedBody(run, seq, Date.now()) });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`the Hook URL answered ${res.status}`);
    };
    const stored = async () => {
      const rs = await service.clickhouse!.query({ query: `SELECT count() AS n FROM ${config.clickhouseDatabase}.events`, format: 'JSONEachRow' });
      return Number((await rs.json<{ n: string }>())[0]!.n);
    };
    // the tenant's data key is made by the first webhook: not part of an event's cost
    await opts.rec.reset('sealwarm');
    await send('sealwarm', 0);
    if ((await opts.rec.waitFor(1, 60_000)) < 1) throw new Error('the warm-up webhook was not delivered');
    while ((await stored()) < 1) await sleep(100);
    const start = { ...bodySealings };
    const run = `seal${Date.now().toString(36)}`;
    await opts.rec.reset(run);
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < opts.events) await send(run, next++);
    }));
    if ((await opts.rec.waitFor(opts.events, 120_000)) < opts.events) throw new Error('not every webhook was delivered');
    const deadline = Date.now() + 60_000;
    while ((await stored()) < opts.events + 1 && Date.now() < deadline) await sleep(100);
    return { seals: round((bodySealings.sealed - start.sealed) / opts.events, 2), opens: round((bodySealings.opened - start.opened) / opts.events, 2) };
  } finally {
    await service.stop();
  }
}
