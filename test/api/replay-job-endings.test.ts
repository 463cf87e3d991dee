import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Redis } from 'ioredis';
import { newId } from '../../core/ids';
import { Logger } from '../../core/log';
import { entityKey, type ReplayJob } from '../../core/model';
import { parseKeyring } from '../../core/secrets/keyring';
import { AvroCodec } from '../../platform/avro/codec';
import { ConfigStore } from '../../platform/config-store/config-store';
import { readTopic } from '../../platform/kafka/topic-table';
import { ReplayMatches } from '../../platform/replay/job-matches';
import { replayKeys } from '../../platform/replay/job-progress';
import { ReplayJobRunner, type ReplayMoment } from '../../platform/replay/job-runner';
import { attemptsOf, destinationWithIngester, sendEvent } from '../support/flow';
import { expectProblem } from '../support/problem';
import { runScript } from '../support/process';
import { receiverPool } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';

type Json = Record<string, any>;
type Answer = Awaited<ReturnType<TestService['api']>>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How replay jobs end, against the running service: a job that keeps failing ends `failed` with
 * its reason after REPLAY_MAX_TRIES tries; a cancel that meets the job's completion leaves one
 * final state everywhere; a cancel freezes the counts at what was queued before it; a range
 * reaching into the future is refused. Runners of the test's own (with the service's store, Redis
 * and producer) stop at named moments of a run, so that each race is placed exactly.
 */
describe('replay jobs end', () => {
  let svc: TestService;
  const receivers = receiverPool();
  let redis: Redis;
  let matches: ReplayMatches;
  const runners: ReplayJobRunner[] = [];
  const base = () => `/v1/tenants/${svc.tenantId}/replays`;
  const store = (id: string) => svc.service.store.get('replay_job', svc.tenantId, id);

  beforeAll(async () => {
    svc = await startTestService({ REPLAY_MAX_TRIES: '3', RETRY_TIERS: '100ms', SINK_FLUSH_MS: '100' });
    redis = new Redis(svc.config.redisUrl!);
    matches = new ReplayMatches(svc.clickhouse, svc.config.clickhouseDatabase);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(runners.map((r) => r.stop()));
    redis?.disconnect();
    await receivers.closeAll();
    await svc?.stop();
  });

  /** `n` events delivered to a new destination; the range [from, to) holds exactly their deliveries. */
  const deliveredRange = async (name: string, n: number) => {
    const receiver = await receivers.next();
    const dest = await destinationWithIngester(svc, name, receiver.url);
    const from = new Date(Date.now() - 1).toISOString();
    const events: string[] = [];
    for (let i = 0; i < n; i++) events.push(await sendEvent(dest.hookUrl, { name, n: i }));
    await eventually(`${name}: originals delivered`, async () => {
      const rows = (await Promise.all(events.map((e) => attemptsOf(svc, e)))).flat();
      return rows.filter((r) => r.status === 'delivered').length === n ? rows : undefined;
    });
    await receiver.waitForRequests(n);
    await sleep(5);
    const to = new Date().toISOString();
    return { receiver, filter: { from, to, destination_id: dest.destinationId, status: 'delivered', event_type: null }, originals: n };
  };

  /**
   * A job run by a runner of this test, which holds its lease from the start (the service's runner
   * never takes it) and awaits `at` at each moment of this job's run.
   */
  const runHeld = async (filter: ReplayJob['filter'], at: (moment: ReplayMoment, id: string) => Promise<void> | void) => {
    const store = svc.service.store;
    const id = newId('replayJob');
    const owner = `test-runner-${id}`;
    await redis.set(replayKeys(svc.config.topicPrefix, id).lease, owner, 'PX', 30_000);
    const told: string[] = [];
    const runner = new ReplayJobRunner({
      store,
      matches,
      replay: svc.service.apiServices!.replay,
      redis,
      prefix: svc.config.topicPrefix,
      ratePerS: 1,
      log: new Logger('error'),
      owner,
      scanMs: 100,
      operational: {
        replayCompleted: async (job) => {
          told.push(job.id);
        },
      },
      at: (moment, job) => (job.id === id ? at(moment, id) : undefined),
    });
    runners.push(runner);
    const now = new Date().toISOString();
    const job: ReplayJob = { kind: 'replay_job', id, tenant_id: svc.tenantId, filter, status: 'running', matched: await matches.count(svc.tenantId, id, filter, 1_000), replayed: 0, delivered: 0, failed: 0, skipped: 0, error: null, created_by: 'test', created_at: now, updated_at: now, finished_at: null, resume: null };
    await store.put(job);
    runner.start();
    const finished = () =>
      eventually(`job ${id} finished`, async () => {
        const j = store.get('replay_job', svc.tenantId, id);
        return j && j.status !== 'running' ? j : undefined;
      }, 30_000, 50);
    return { id, told, runner, finished, matched: job.matched };
  };
  const cancel = (id: string) => svc.api('DELETE', `${base()}/${id}`);
  const cancelMarked = (id: string) => eventually('the cancel marked in Redis', async () => ((await redis.exists(replayKeys(svc.config.topicPrefix, id).cancelled)) === 1 ? true : undefined), 5_000, 2);
  /** The job as a fresh reader of the config topic sees it, and the last record of its key there. */
  const asTheTopicHoldsIt = async (id: string) => {
    const codec = AvroCodec.connect(svc.config.schemaRegistryUrl!);
    const reader = new ConfigStore(svc.service.kafka, codec, svc.service.topics.config, parseKeyring(process.env.SECRETS_KEK!, 'SECRETS_KEK'));
    await reader.start();
    try {
      const seen = reader.get('replay_job', svc.tenantId, id);
      const key = entityKey('replay_job', svc.tenantId, id);
      const records = (await readTopic(svc.service.kafka, svc.service.topics.config)).filter((r) => r.key?.toString() === key);
      const last = JSON.parse((await codec.decode('ConfigEntry', records.at(-1)!.value!)).data) as ReplayJob;
      return { seen, last };
    } finally {
      await reader.stop();
    }
  };

  it('ends a job that keeps failing as failed, with its reason, after REPLAY_MAX_TRIES tries; GET, the CLI and MCP show it', async () => {
    const { filter } = await deliveredRange('failing', 1);
    const db = svc.config.clickhouseDatabase;
    // the stored events go missing (a query error every try) once the job has counted its matches
    await svc.clickhouse.command({ query: `RENAME TABLE ${db}.events TO ${db}.events_away` });
    let id: string;
    try {
      const started = await svc.api('POST', base(), { from: filter.from, to: filter.to, destination_id: filter.destination_id });
      expect(started.status).toBe(202);
      expect(started.body.matched).toBe(1);
      id = started.body.id;
      const failed = await eventually('the job failed', async () => {
        const r = await svc.api('GET', `${base()}/${id}`);
        return r.body.status !== 'running' ? r.body : undefined;
      }, 30_000);
      expect(failed).toMatchObject({ status: 'failed', replayed: 0, finished_at: expect.any(String), error: expect.stringMatching(/^3 tries in a row failed; the last: .*events/) });
      // and it stays so: no process takes a failed job up again
      await sleep(1_500);
      expect((await svc.api('GET', `${base()}/${id}`)).body).toEqual(failed);
      expectProblem(await cancel(id), 409, 'conflict', svc.config.errorBase);

      const env = { ...process.env, HOOKLINE_API_KEY: svc.apiKey, HOOKLINE_API_URL: svc.url, HOOKLINE_TENANT: svc.tenantId };
      const shown = await runScript('cli/main.ts', ['replays', 'status', id], env);
      expect(JSON.parse(shown.stdout)).toMatchObject({ id, status: 'failed', error: failed.error });
      const client = new Client({ name: 'hookline-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${svc.apiKey}` } } }));
      try {
        const result = (await client.callTool({ name: 'get_replay', arguments: { replay_id: id } })) as { isError?: boolean; structuredContent?: Json };
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toMatchObject({ id, status: 'failed', error: failed.error });
      } finally {
        await client.close();
      }
    } finally {
      await svc.clickhouse.command({ query: `RENAME TABLE ${db}.events_away TO ${db}.events` });
    }
    // the same range replays once the events are back: the bound ended that job, not the range
    const again = await svc.api('POST', base(), { from: filter.from, to: filter.to, destination_id: filter.destination_id });
    const done = await eventually('the second job finished', async () => {
      const r = await svc.api('GET', `${base()}/${again.body.id}`);
      return r.body.status !== 'running' ? r.body : undefined;
    });
    expect(done).toMatchObject({ status: 'completed', replayed: 1, delivered: 1, error: null });
  }, 90_000);

  it('a cancel before a batch is sent: the batch never goes out, and the counts stop at what went before', async () => {
    const range = await deliveredRange('cancel before send', 3);
    let answer: Answer | undefined;
    let ready = 0;
    const job = await runHeld(range.filter, async (moment, id) => {
      if (moment === 'batch-ready' && ++ready === 2) answer = await cancel(id);
    });
    const final = await job.finished();
    await sleep(1_500);
    expect(answer).toMatchObject({ status: 200, body: { status: 'cancelled', replayed: 1 } });
    expect(range.receiver.requests.length - range.originals).toBe(1);
    expect(store(job.id)).toMatchObject({ status: 'cancelled', replayed: 1 });
    expect((await svc.api('GET', `${base()}/${job.id}`)).body).toEqual(answer!.body);
    expect(final.status).toBe('cancelled');
    expect(job.told).toEqual([]);
  }, 60_000);

  it('a cancel while a batch is being sent: the batch counts, nothing after it goes out or counts', async () => {
    const range = await deliveredRange('cancel while sending', 3);
    let cancelling: Promise<Answer> | undefined;
    let sending = 0;
    const job = await runHeld(range.filter, async (moment, id) => {
      if (moment !== 'batch-sending' || ++sending !== 2) return;
      cancelling = cancel(id);
      await cancelMarked(id);
    });
    await job.finished();
    const answer = await cancelling!;
    expect(answer).toMatchObject({ status: 200, body: { status: 'cancelled', replayed: 2 } });
    await range.receiver.waitForRequests(range.originals + 2);
    await sleep(1_500);
    expect(range.receiver.requests.length - range.originals).toBe(2);
    expect((await svc.api('GET', `${base()}/${job.id}`)).body).toEqual(answer.body);
    expect(job.told).toEqual([]);
  }, 60_000);

  it('a cancel meeting the completion leaves one final state, in every process, told once or not at all', async () => {
    const range = await deliveredRange('cancel at completion', 1);
    // the cancel done before the completing write, racing it, and sent just as it is made
    const ways = ['cancel first', 'together', 'complete first', 'cancel first', 'together', 'complete first'] as const;
    const seen: string[] = [];
    for (const way of ways) {
      let cancelling: Promise<Answer> | undefined;
      const job = await runHeld(range.filter, async (moment, id) => {
        if (moment !== 'finishing') return;
        cancelling = cancel(id);
        if (way === 'cancel first') await cancelling;
        else if (way === 'together') await cancelMarked(id);
      });
      const final = await job.finished();
      const answer = await eventually('the cancel answered', async () => cancelling && (await cancelling), 10_000, 20);
      await sleep(1_000);
      const shown = (await svc.api('GET', `${base()}/${job.id}`)).body;
      expect(shown.status).toBe(final.status);
      if (answer.status === 200) {
        expect(answer.body).toEqual(shown);
        expect(shown).toMatchObject({ status: 'cancelled', replayed: 1 });
        expect(job.told).toEqual([]);
      } else {
        expectProblem(answer, 409, 'conflict', svc.config.errorBase);
        expect(shown).toMatchObject({ status: 'completed', replayed: 1, delivered: 1 });
        expect(job.told).toEqual([job.id]);
      }
      if (way === 'cancel first') expect(shown.status).toBe('cancelled');
      // a process reading the topic afresh sees the same, and the key's last record is that state (what compaction keeps)
      const { seen: fresh, last } = await asTheTopicHoldsIt(job.id);
      expect(fresh).toMatchObject({ status: shown.status, replayed: shown.replayed, delivered: shown.delivered, finished_at: shown.finished_at });
      expect(last).toMatchObject({ status: shown.status, finished_at: shown.finished_at });
      await job.runner.stop();
      seen.push(`${way}: ${shown.status}`);
    }
    expect(seen.filter((s) => s.startsWith('cancel first'))).toEqual(['cancel first: cancelled', 'cancel first: cancelled']);
  }, 120_000);

  it('two processes ending one job at once: the first record on the topic wins in both, and the other writer learns it lost', async () => {
    const codec = AvroCodec.connect(svc.config.schemaRegistryUrl!);
    await codec.register({ [svc.service.topics.config]: 'ConfigEntry' });
    const other = new ConfigStore(svc.service.kafka, codec, svc.service.topics.config, parseKeyring(process.env.SECRETS_KEK!, 'SECRETS_KEK'));
    await other.start();
    try {
      for (let i = 0; i < 5; i++) {
        const id = newId('replayJob');
        // nobody runs it: its lease is taken
        await redis.set(replayKeys(svc.config.topicPrefix, id).lease, 'nobody', 'PX', 30_000);
        const now = new Date().toISOString();
        const job: ReplayJob = { kind: 'replay_job', id, tenant_id: svc.tenantId, filter: { from: now, to: now }, status: 'running', matched: 1, replayed: 1, delivered: 0, failed: 0, skipped: 0, error: null, created_by: 'test', created_at: now, updated_at: now, finished_at: null, resume: null };
        await svc.service.store.put(job);
        await eventually('the other process has the job', async () => other.get('replay_job', svc.tenantId, id));
        const [cancelled, completed] = await Promise.all([
          svc.service.store.updateUnlessFinal({ ...job, status: 'cancelled', finished_at: new Date().toISOString() }),
          other.updateUnlessFinal({ ...job, status: 'completed', delivered: 1, finished_at: new Date().toISOString() }),
        ]);
        expect([cancelled.applied, completed.applied].filter(Boolean)).toHaveLength(1);
        const winner = cancelled.applied ? cancelled.standing : completed.standing;
        expect(cancelled.standing).toEqual(winner);
        expect(completed.standing).toEqual(winner);
        await other.sync();
        await svc.service.store.sync();
        expect(svc.service.store.get('replay_job', svc.tenantId, id)).toEqual(winner);
        expect(other.get('replay_job', svc.tenantId, id)).toEqual(winner);
        // a progress write arriving late changes nothing either
        expect((await other.updateUnlessFinal({ ...job, replayed: 7 })).applied).toBe(false);
        expect((await asTheTopicHoldsIt(id)).last).toEqual(winner);
      }
    } finally {
      await other.stop();
    }
  }, 60_000);

  it('refuses a range whose end is later than now, naming `to`', async () => {
    const from = new Date(Date.now() - 60_000).toISOString();
    const future = await svc.api('POST', base(), { from, to: new Date(Date.now() + 60_000).toISOString() });
    expectProblem(future, 422, 'unprocessable-entity', svc.config.errorBase);
    expect(future.body.errors).toEqual([{ field: 'to', message: expect.stringMatching(/later than now/) }]);
    const past = await svc.api('POST', base(), { from, to: new Date(Date.now() - 1_000).toISOString() });
    expect(past.status).toBe(202);
  });
});
