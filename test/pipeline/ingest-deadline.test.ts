import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Producer, ProducerBatch } from 'kafkajs';
import { createApp } from '../../api/app';
import { writeProblem } from '../../api/problem';
import { Logger } from '../../core/log';
import type { Ingester } from '../../core/model';
import type { Topics } from '../../core/topics';
import type { AvroCodec } from '../../platform/avro/codec';
import { BatchingProducer, SendDeadlineError } from '../../platform/kafka/batching-producer';
import { hookFastPath, ingestRouter, type IngestDeps } from '../../pipeline/ingest/router';
import { buildInfo } from '../../service/service';
import { healthProbe } from '../../service/health';

/**
 * A kafkajs producer whose requests do not come back until released, as with a frozen broker
 * (its connection open, no answer): what the gathering producer and the Hook URL do meanwhile.
 */
function frozenProducer(): { producer: Producer; requests: ProducerBatch[]; release(): void } {
  const requests: ProducerBatch[] = [];
  const waiting: (() => void)[] = [];
  const producer = {
    isIdempotent: () => true,
    sendBatch(batch: ProducerBatch) {
      requests.push(batch);
      return new Promise((resolve) => waiting.push(() => resolve([])));
    },
    disconnect: async () => undefined,
  } as unknown as Producer;
  return { producer, requests, release: () => waiting.splice(0).forEach((w) => w()) };
}

const values = (batch: ProducerBatch) => batch.topicMessages!.flatMap((t) => t.messages.map((m) => String(m.value)));

describe('a send past its deadline', () => {
  it('rejects what was in a request as maybe written, and drops what was still waiting for one', async () => {
    const frozen = frozenProducer();
    const gathering = new BatchingProducer(frozen.producer);
    const inFlight = gathering.send([{ topic: 't', messages: [{ value: 'a' }] }], { deadlineMs: 200 });
    await new Promise((r) => setImmediate(r));
    const waiting = gathering.send([{ topic: 't', messages: [{ value: 'b' }] }], { deadlineMs: 200 });
    const unbounded = gathering.send([{ topic: 't', messages: [{ value: 'c' }] }]);
    const [first, second] = await Promise.allSettled([inFlight, waiting]);
    expect(first).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ name: 'SendDeadlineError', written: 'maybe' }) });
    expect(second).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ name: 'SendDeadlineError', written: 'no' }) });
    expect((second as PromiseRejectedResult).reason).toBeInstanceOf(SendDeadlineError);
    // the broker answers: the next request carries what still waits, never the dropped record
    frozen.release();
    await new Promise((r) => setTimeout(r, 20));
    frozen.release();
    await unbounded;
    expect(frozen.requests.map(values)).toEqual([['a'], ['c']]);
  });
});

describe('the Hook URL while Kafka does not answer', () => {
  let server: http.Server;
  let url = '';
  let frozen: ReturnType<typeof frozenProducer>;

  beforeAll(async () => {
    frozen = frozenProducer();
    const log = new Logger('error');
    const ingester = { kind: 'ingester', id: 'ing_1', tenant_id: 'ten_1', provider: 'none', config: {}, filters: [] } as unknown as Ingester;
    const deps: IngestDeps = {
      topics: { received: 'webhooks.received' } as Topics,
      config: { find: () => ingester, sync: async () => undefined, version: 1n },
      codec: { encodeNow: () => Buffer.from('event') } as unknown as AvroCodec,
      producer: new BatchingProducer(frozen.producer),
      maxBodyBytes: 1_000_000,
      maxHops: 5,
      log,
      ackDeadlineMs: 300,
    };
    const extra = express.Router();
    extra.use(ingestRouter(deps));
    const app = createApp({ errorBase: () => 'http://x', log, probe: healthProbe({}), build: buildInfo(), services: () => undefined, extraRouters: () => extra });
    server = http.createServer(hookFastPath(() => deps, app, (err, _req, res, requestId) => writeProblem(res, 'http://x', err, requestId, log)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/hooks/ing_1`;
  });
  afterAll(async () => {
    frozen.release();
    await new Promise((r) => server.close(() => r(undefined)));
  });

  it('answers 503 with Retry-After at the deadline, saying whether the event may still be stored', async () => {
    const post = () => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    const started = performance.now();
    const first = post();
    await new Promise((r) => setTimeout(r, 50));
    const answers = await Promise.all([first, post()]);
    const waited = performance.now() - started;
    expect(answers.map((a) => a.status)).toEqual([503, 503]);
    expect(answers.map((a) => a.headers.get('retry-after'))).toEqual(['1', '1']);
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as { type: string; detail: string; retry_after_seconds: number }[];
    expect(bodies[0]).toMatchObject({ type: 'http://x/errors/service-unavailable', retry_after_seconds: 1, detail: expect.stringMatching(/within 300 ms; it may still be stored/) });
    expect(bodies[1]).toMatchObject({ detail: expect.stringMatching(/within 300 ms and it was not stored/) });
    // prompt: the deadline, not the Kafka client's request timeout
    expect(waited).toBeLessThan(5_000);
    expect(frozen.requests).toHaveLength(1);
  });
});
