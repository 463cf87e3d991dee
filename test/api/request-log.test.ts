import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { createApp } from '../../api/app';
import { writeProblem } from '../../api/problem';
import { requestLog } from '../../api/request-log';
import { HOPS_HEADER } from '../../core/hops';
import { Logger } from '../../core/log';
import type { Ingester } from '../../core/model';
import type { Topics } from '../../core/topics';
import type { AvroCodec } from '../../platform/avro/codec';
import type { BatchingProducer } from '../../platform/kafka/batching-producer';
import { hookFastPath, ingestRouter, type IngestDeps } from '../../pipeline/ingest/router';
import { buildInfo } from '../../service/service';
import { healthProbe } from '../../service/health';

type Line = Record<string, unknown>;

/**
 * The app as the service serves it (Hook URL fast path in front of the framework), with a
 * route that logs through the request's logger and one that fails. Hook URLs take no hop
 * (MAX_HOPS 0), so a webhook is refused with a warning before anything reaches Kafka.
 */
async function serve(): Promise<{ url: string; lines: () => Line[]; close(): Promise<void> }> {
  const out: string[] = [];
  const log = new Logger('info', {}, (line) => out.push(line));
  const ingester = { kind: 'ingester', id: 'ing_1', tenant_id: 'ten_1' } as Ingester;
  const deps: IngestDeps = {
    topics: {} as Topics,
    config: { find: () => ingester, sync: async () => undefined, version: 1n },
    codec: {} as AvroCodec,
    producer: {} as BatchingProducer,
    maxBodyBytes: 1_000_000,
    maxHops: 0,
    log,
  };
  const extra = express.Router();
  extra.get('/work', (_req, res) => {
    requestLog(res, log).info('worked', { trace_id: 'trace-1' });
    res.json({ ok: true });
  });
  extra.get('/fail', () => {
    throw new Error('broken');
  });
  extra.use(ingestRouter(deps));
  const app = createApp({ errorBase: () => 'http://x', log, probe: healthProbe({}), build: buildInfo(), services: () => undefined, extraRouters: () => extra });
  const server = http.createServer(hookFastPath(() => deps, app, (err, _req, res, requestId) => writeProblem(res, 'http://x', err, requestId, log)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    lines: () => out.map((l) => JSON.parse(l) as Line),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe('request ids on log lines', () => {
  let s: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    s = await serve();
  });
  afterAll(() => s.close());

  it("mark every line a request writes with that request's id, whatever else the line carries", async () => {
    const answers = await Promise.all([1, 2, 3].map(() => fetch(`${s.url}/work`)));
    const ids = answers.map((a) => a.headers.get('x-request-id'));
    expect(new Set(ids).size).toBe(3);
    const worked = s.lines().filter((l) => l.msg === 'worked');
    expect(worked.map((l) => l.request_id).sort()).toEqual([...ids].sort());
    expect(worked.every((l) => l.trace_id === 'trace-1')).toBe(true);
  });

  it('mark an unexpected error with the id the problem document names', async () => {
    const res = await fetch(`${s.url}/fail`);
    expect(res.status).toBe(500);
    const problem = (await res.json()) as { instance: string };
    expect(problem.instance).toBe(res.headers.get('x-request-id'));
    expect(s.lines().filter((l) => l.msg === 'unexpected error')).toEqual([expect.objectContaining({ level: 'error', request_id: problem.instance, error: 'broken' })]);
  });

  it.each([
    ['the fast path', {}, '{"a":1}'],
    ['the framework (a compressed body)', { 'content-encoding': 'gzip' }, gzipSync('{"a":1}')],
  ])('mark a Hook URL line of %s with its request id', async (_path, headers: Record<string, string>, body: string | Buffer) => {
    const res = await fetch(`${s.url}/v1/hooks/ing_1`, { method: 'POST', headers: { 'content-type': 'application/json', [HOPS_HEADER]: '1', ...headers }, body });
    expect(res.status).toBe(422);
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^req/);
    const refused = s.lines().filter((l) => l.msg === 'webhook refused: too many hops through this service' && l.request_id === id);
    expect(refused).toEqual([expect.objectContaining({ level: 'warn', tenant_id: 'ten_1', ingester_id: 'ing_1', request_id: id })]);
  });
});
