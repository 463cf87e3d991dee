import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { derivedId } from '../../core/ids';
import { errorMessage, type Logger } from '../../core/log';
import type { ReplayJob } from '../../core/model';
import { decodeStoredBody } from '../../core/stored-body';
import type { DeliveryTask } from '../avro/records';
import type { ConfigStore } from '../config-store/config-store';
import { RedisTokenLeases } from '../redis/token-leases';
import type { ReplayMatches } from './job-matches';
import { abandonBatch, beginBatch, clearTries, isCancelled, noteFailedTry, readProgress, readTries, recordProgress, replayKeys, type Progress } from './job-progress';
import { taskOfStoredEvent, type StoredEvent } from './stored-events';
import { queueReplays, type ReplayDeps } from './replay';

/** Moments of a job's run at which `ReplayRunnerOptions.at` is awaited. */
export type ReplayMoment =
  /** A batch is read and the shared rate allows it; the job's cancel mark is not checked yet. */
  | 'batch-ready'
  /** The batch is marked as being sent (a cancel from here waits for it); Kafka has not got it yet. */
  | 'batch-sending'
  /** Every match is queued and every queued delivery ended; the job is not written completed yet. */
  | 'finishing';

export interface ReplayRunnerOptions {
  store: ConfigStore;
  matches: ReplayMatches;
  replay: ReplayDeps;
  redis: Redis;
  /** Namespaces this deployment's keys in Redis. */
  prefix: string;
  /** Replayed deliveries queued per second across every job and process of the deployment. */
  ratePerS: number;
  log: Logger;
  /** How long a process holds a job without renewing its lease (ms). */
  leaseMs?: number;
  /** How often running jobs are looked for, and finished ones checked (ms). */
  scanMs?: number;
  /** This runner's name in the leases; default the process id and a random part. */
  owner?: string;
  /** Tells the tenant a job completed (operational event `replay.completed`); never rejects. */
  operational?: { replayCompleted(job: ReplayJob): Promise<unknown> };
  /** Tries in a row that end in an error before the job ends `failed` (REPLAY_MAX_TRIES); default 10. */
  maxTries?: number;
  /** Awaited at each moment of a run, so that a test can place a cancel exactly there; default none. */
  at?: (moment: ReplayMoment, job: ReplayJob) => Promise<void> | void;
}

/** Progress written to the entity at most this often. */
const PERSIST_MS = 1_000;
/** Matches read and queued at a time, at most. */
const BATCH = 100;
/** The longest reason a failed job keeps (a query error may quote its whole query). */
const REASON_CHARS = 1_000;

// Renews or releases the lease only while this process holds it.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs the replay jobs of the deployment in its API processes. Each running job is held by one
 * process at a time through a lease in Redis, renewed while it works; a process that finds a
 * running job whose lease lapsed (its holder crashed or stopped) takes it over and goes on from
 * the job's progress, which Redis keeps after every batch (and the entity about once a second).
 *
 * A job queues its matches in (attempted_at, delivery_id) order, each as a new delivery whose id
 * derives from the job and the original, so a batch queued twice across a takeover is the same
 * deliveries (one webhook-id) again, never new ones. Every process takes its batches from one
 * token bucket per deployment (REPLAY_RATE_PER_S), so replays share a fixed rate with each other
 * and leave the rest of the pipeline's capacity to live traffic. Once every match is queued the
 * job waits until each of its deliveries is delivered or failed for good, then completes.
 *
 * A job ends once, completed, cancelled or failed: every ending is a conditional write of the
 * config topic (ConfigStore.updateUnlessFinal), and the first to reach it stands in every process.
 * A batch begins only while the job is not cancelled (job-progress.ts), so a cancel counts what
 * began before it and nothing begins after it.
 */
export class ReplayJobRunner {
  private readonly owner: string;
  private readonly working = new Map<string, Promise<void>>();
  private readonly tokens: RedisTokenLeases;
  private readonly leaseMs: number;
  private readonly scanMs: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly o: ReplayRunnerOptions) {
    this.owner = o.owner ?? `${process.pid}-${randomBytes(6).toString('hex')}`;
    this.tokens = new RedisTokenLeases(o.redis);
    this.leaseMs = o.leaseMs ?? 10_000;
    this.scanMs = o.scanMs ?? 1_000;
  }

  start(): void {
    this.timer = setInterval(() => this.scan(), this.scanMs);
    this.timer.unref();
    this.scan();
  }

  /** Looks for work now (a job was just created). */
  kick(): void {
    this.scan();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.allSettled([...this.working.values()]);
  }

  private scan(): void {
    if (this.stopped) return;
    for (const job of this.o.store.all('replay_job')) {
      if (job.status !== 'running' || this.working.has(job.id)) continue;
      const run = this.claim(job.id)
        .then((held) => (held ? this.hold(job.id, (lost) => this.attempt(job.id, job.tenant_id, lost)) : undefined))
        .catch((err: unknown) => this.o.log.warn('replay job interrupted; it resumes from its progress', { replay_job_id: job.id, tenant_id: job.tenant_id, error: errorMessage(err) }))
        .finally(() => this.working.delete(job.id));
      this.working.set(job.id, run);
    }
  }

  /** Takes the job's lease when it is free, or keeps it when it is already this runner's. */
  private async claim(jobId: string): Promise<boolean> {
    const key = replayKeys(this.o.prefix, jobId).lease;
    if ((await this.o.redis.set(key, this.owner, 'PX', this.leaseMs, 'NX')) === 'OK') return true;
    return Number(await this.o.redis.eval(RENEW, 1, key, this.owner, this.leaseMs)) === 1;
  }

  /** Runs `fn` while renewing the job's lease, then releases it; `lost()` turns true once another holds it. */
  private async hold(jobId: string, fn: (lost: () => boolean) => Promise<void>): Promise<void> {
    const { redis } = this.o;
    const key = replayKeys(this.o.prefix, jobId).lease;
    let lost = false;
    const renewal = setInterval(() => {
      redis.eval(RENEW, 1, key, this.owner, this.leaseMs).then(
        (ok) => {
          if (Number(ok) !== 1) lost = true;
        },
        () => undefined, // a lease not renewed lapses; another process may take over
      );
    }, Math.floor(this.leaseMs / 3));
    try {
      await fn(() => lost);
    } finally {
      clearInterval(renewal);
      await redis.eval(RELEASE, 1, key, this.owner).catch(() => undefined);
    }
  }

  /**
   * One try of the job: it works until it ends, is cancelled, or fails. A try that fails counts
   * (in Redis, across processes), and the next waits 1 s, doubling up to 60 s; once REPLAY_MAX_TRIES
   * tries failed in a row the job ends `failed` with the last one's reason. A try that makes
   * progress clears the count. A try cut short by a stop or a lost lease does not count.
   */
  private async attempt(jobId: string, tenantId: string, lost: () => boolean): Promise<void> {
    const { redis, log } = this.o;
    const keys = replayKeys(this.o.prefix, jobId);
    const maxTries = this.o.maxTries ?? 10;
    const tries = await readTries(redis, keys);
    // the failure was counted, but its process stopped before it ended the job
    if (tries.count >= maxTries) return this.fail(tenantId, jobId, tries.count, tries.reason);
    if (tries.nextAtMs > Date.now()) return;
    try {
      await this.work(jobId, tenantId, lost, tries.count > 0);
    } catch (err) {
      if (this.stopped || lost()) throw err;
      const reason = errorMessage(err).slice(0, REASON_CHARS);
      const count = await noteFailedTry(redis, keys, reason);
      log.warn('replay job try failed', { replay_job_id: jobId, tenant_id: tenantId, try: count, max_tries: maxTries, error: reason });
      if (count >= maxTries) await this.fail(tenantId, jobId, count, reason);
    }
  }

  private async work(jobId: string, tenantId: string, lost: () => boolean, failedBefore: boolean): Promise<void> {
    const { redis, store, matches, prefix, log } = this.o;
    const keys = replayKeys(prefix, jobId);
    const entity = () => store.get('replay_job', tenantId, jobId);
    const start = entity();
    if (!start || start.status !== 'running') return;
    const progress = await this.loadProgress(start);
    log.info('replay job running here', { replay_job_id: jobId, tenant_id: tenantId, replayed: progress.replayed, done: progress.done });
    let persistedAt = 0;
    let uncleared = failedBefore;
    const idle = () => this.stopped || lost();
    while (!idle()) {
      const job = entity();
      if (!job || job.status !== 'running' || (await isCancelled(redis, keys))) return;
      if (!progress.done && !(await this.queueBatch(job, progress, idle))) return;
      if (Date.now() - persistedAt < PERSIST_MS) {
        // queuing goes at the shared rate; once all is queued, only the outcomes are awaited
        if (progress.done) await sleep(Math.min(this.scanMs, PERSIST_MS));
        continue;
      }
      const outcomes = await matches.outcomes(tenantId, jobId);
      const counts = {
        replayed: progress.replayed,
        skipped: progress.skipped,
        delivered: outcomes.delivered,
        failed: outcomes.failed,
        resume: { after_ms: progress.after_ms, after_id: progress.after_id, done: progress.done },
      };
      if (progress.done && outcomes.delivered + outcomes.failed >= progress.replayed) return this.complete(job, counts);
      if (!(await this.persist(tenantId, jobId, counts))) return;
      persistedAt = Date.now();
      if (uncleared) {
        await clearTries(redis, keys);
        uncleared = false;
      }
    }
  }

  /** The newest progress: Redis's when it has it, else the entity's. */
  private async loadProgress(job: ReplayJob): Promise<Progress> {
    const held = await readProgress(this.o.redis, replayKeys(this.o.prefix, job.id));
    if (held) return held;
    const r = job.resume;
    return { after_ms: r?.after_ms ?? -1, after_id: r?.after_id ?? '', done: r?.done ?? false, replayed: job.replayed, skipped: job.skipped ?? 0 };
  }

  /**
   * Queues the next matches the shared rate allows, then records how far the job got. False when
   * the job was cancelled before the batch began: then nothing of it is sent.
   */
  private async queueBatch(job: ReplayJob, progress: Progress, idle: () => boolean): Promise<boolean> {
    const { matches, prefix, redis } = this.o;
    const keys = replayKeys(prefix, job.id);
    const after = progress.after_id === '' && progress.after_ms < 0 ? null : progress;
    const page = await matches.page(job.tenant_id, job.id, job.filter, after, Math.min(BATCH, this.o.ratePerS));
    if (page.length === 0) {
      progress.done = true;
      await recordProgress(redis, keys, progress);
      return true;
    }
    let granted = 0;
    while (granted === 0 && !idle()) {
      const [grant] = await this.tokens.take([{ key: `${prefix}replay:rate`, limit: this.o.ratePerS, windowSeconds: 1, cost: page.length }]);
      granted = grant!.granted;
      if (granted === 0) await sleep(Math.max(10, Math.min(grant!.retryMs, 1_000)));
    }
    if (granted === 0) return true;
    const slice = page.slice(0, granted);
    const events = await matches.events(job.tenant_id, slice.map((m) => m.event_id));
    const tasks: DeliveryTask[] = [];
    let skipped = 0;
    const createdAt = Date.parse(job.created_at);
    for (const m of slice) {
      const event: StoredEvent | undefined = events.get(m.event_id);
      // never deliver bytes other than the ones received; a body past its retention is not sent
      const body = event && !event.body_expired && decodeStoredBody(event.body, event.body_sha256);
      if (!event || !body) {
        skipped += 1;
        continue;
      }
      tasks.push(taskOfStoredEvent(event, body, { delivery_id: derivedId('delivery', createdAt, `${job.id}/${m.delivery_id}`), tenant_id: job.tenant_id, destination_id: m.destination_id, replay_of: m.delivery_id, replay_job_id: job.id }));
    }
    const traces = new Map(slice.map((m) => [m.delivery_id, m.trace_id]));
    await this.o.at?.('batch-ready', job);
    if (!(await beginBatch(redis, keys, tasks.length))) return false;
    try {
      await this.o.at?.('batch-sending', job);
      await queueReplays(this.o.replay, tasks, `replay job ${job.id}`, (task) => traces.get(task.replay_of!));
    } catch (err) {
      await abandonBatch(redis, keys).catch(() => undefined);
      throw err;
    }
    const last = slice[slice.length - 1]!;
    progress.after_ms = last.at_ms;
    progress.after_id = last.delivery_id;
    progress.replayed += tasks.length;
    progress.skipped += skipped;
    await recordProgress(redis, keys, progress);
    return true;
  }

  /** Writes progress over the running job; false once the job ended (a cancel, anywhere, was first). */
  private async persist(tenantId: string, jobId: string, counts: Partial<ReplayJob>): Promise<boolean> {
    const current = this.o.store.get('replay_job', tenantId, jobId);
    if (!current || current.status !== 'running') return false;
    const { standing } = await this.o.store.updateUnlessFinal({ ...current, ...counts, updated_at: new Date().toISOString() });
    return standing?.kind === 'replay_job' && standing.status === 'running';
  }

  /**
   * Ends the job `completed`, unless a cancel ended it first: the config topic decides which of
   * the two (ConfigStore.updateUnlessFinal), and only the write that completed it tells the tenant.
   */
  private async complete(job: ReplayJob, counts: Partial<ReplayJob>): Promise<void> {
    await this.o.at?.('finishing', job);
    const current = this.o.store.get('replay_job', job.tenant_id, job.id);
    if (!current || current.status !== 'running') return;
    const now = new Date().toISOString();
    const { applied, standing } = await this.o.store.updateUnlessFinal({ ...current, ...counts, status: 'completed', finished_at: now, updated_at: now });
    if (!applied || standing?.kind !== 'replay_job') return;
    await this.o.operational?.replayCompleted(standing);
    this.o.log.info('replay job completed', { replay_job_id: job.id, tenant_id: job.tenant_id, matched: job.matched, replayed: standing.replayed, delivered: standing.delivered, failed: standing.failed });
  }

  /** Ends the job `failed` with the reason, counting what it queued (unless it ended otherwise first). */
  private async fail(tenantId: string, jobId: string, tries: number, reason: string): Promise<void> {
    const current = this.o.store.get('replay_job', tenantId, jobId);
    if (!current || current.status !== 'running') return;
    const progress = await this.loadProgress(current);
    const now = new Date().toISOString();
    const error = `${tries} tries in a row failed; the last: ${reason}`;
    const { applied } = await this.o.store.updateUnlessFinal({ ...current, status: 'failed', error, replayed: progress.replayed, skipped: progress.skipped, finished_at: now, updated_at: now });
    if (applied) this.o.log.error('replay job failed', { replay_job_id: jobId, tenant_id: tenantId, replayed: progress.replayed, error });
  }
}

/** Runs replay jobs in this process until the service stops. */
export function startReplayJobs(options: ReplayRunnerOptions, cleanups: (() => Promise<unknown>)[]): ReplayJobRunner {
  const runner = new ReplayJobRunner(options);
  runner.start();
  cleanups.push(() => runner.stop());
  return runner;
}
