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
import { taskOfStoredEvent, type StoredEvent } from './stored-events';
import { queueReplays, type ReplayDeps } from './replay';

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
}

/** Where a job stands: what Redis holds is newer than the entity (written on every batch). */
interface Progress {
  after_ms: number;
  after_id: string;
  done: boolean;
  replayed: number;
  skipped: number;
}

/** Progress written to the entity at most this often. */
const PERSIST_MS = 1_000;
/** Matches read and queued at a time, at most. */
const BATCH = 100;
/** Progress kept in Redis after its last write. */
const PROGRESS_TTL_S = 30 * 86_400;

// Renews or releases the lease only while this process holds it.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Redis keys of one job. */
export const replayKeys = (prefix: string, jobId: string) => ({
  lease: `${prefix}replay:lease:${jobId}`,
  progress: `${prefix}replay:progress:${jobId}`,
  cancelled: `${prefix}replay:cancelled:${jobId}`,
});

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
        .then((held) => (held ? this.work(job.id, job.tenant_id) : undefined))
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

  private async work(jobId: string, tenantId: string): Promise<void> {
    const { redis, store, matches, prefix, log } = this.o;
    const keys = replayKeys(prefix, jobId);
    let lost = false;
    const renewal = setInterval(() => {
      redis.eval(RENEW, 1, keys.lease, this.owner, this.leaseMs).then(
        (ok) => {
          if (Number(ok) !== 1) lost = true;
        },
        () => undefined, // a lease not renewed lapses; another process may take over
      );
    }, Math.floor(this.leaseMs / 3));
    const entity = () => store.get('replay_job', tenantId, jobId);
    try {
      const start = entity();
      if (!start || start.status !== 'running') return;
      const progress = await this.loadProgress(start);
      log.info('replay job running here', { replay_job_id: jobId, tenant_id: tenantId, replayed: progress.replayed, done: progress.done });
      let persistedAt = 0;
      const idle = () => this.stopped || lost;
      while (!idle()) {
        const job = entity();
        if (!job || job.status !== 'running' || (await redis.exists(keys.cancelled)) === 1) return;
        if (!progress.done) await this.queueBatch(job, progress, idle);
        if (Date.now() - persistedAt < PERSIST_MS) {
          // queuing goes at the shared rate; once all is queued, only the outcomes are awaited
          if (progress.done) await sleep(Math.min(this.scanMs, PERSIST_MS));
          continue;
        }
        const outcomes = await matches.outcomes(tenantId, jobId);
        const finished = progress.done && outcomes.delivered + outcomes.failed >= progress.replayed;
        const now = new Date().toISOString();
        await this.persist(tenantId, jobId, {
          replayed: progress.replayed,
          skipped: progress.skipped,
          delivered: outcomes.delivered,
          failed: outcomes.failed,
          resume: { after_ms: progress.after_ms, after_id: progress.after_id, done: progress.done },
          ...(finished ? { status: 'completed' as const, finished_at: now } : {}),
        });
        persistedAt = Date.now();
        if (finished) {
          const completed = entity();
          // only the write that completed it tells: a job cancelled meanwhile stays cancelled
          if (completed?.status === 'completed') await this.o.operational?.replayCompleted(completed);
          log.info('replay job completed', { replay_job_id: jobId, tenant_id: tenantId, matched: job.matched, replayed: progress.replayed, delivered: outcomes.delivered, failed: outcomes.failed });
          return;
        }
      }
    } finally {
      clearInterval(renewal);
      await redis.eval(RELEASE, 1, keys.lease, this.owner).catch(() => undefined);
    }
  }

  /** The newest progress: Redis's when it has it, else the entity's. */
  private async loadProgress(job: ReplayJob): Promise<Progress> {
    const held = await this.o.redis.hgetall(replayKeys(this.o.prefix, job.id).progress);
    if (held.after_id !== undefined) {
      return { after_ms: Number(held.after_ms), after_id: held.after_id, done: held.done === '1', replayed: Number(held.replayed), skipped: Number(held.skipped ?? 0) };
    }
    const r = job.resume;
    return { after_ms: r?.after_ms ?? -1, after_id: r?.after_id ?? '', done: r?.done ?? false, replayed: job.replayed, skipped: job.skipped ?? 0 };
  }

  /** Queues the next matches the shared rate allows, then records how far the job got. */
  private async queueBatch(job: ReplayJob, progress: Progress, idle: () => boolean): Promise<void> {
    const { matches, prefix } = this.o;
    const after = progress.after_id === '' && progress.after_ms < 0 ? null : progress;
    const page = await matches.page(job.tenant_id, job.id, job.filter, after, Math.min(BATCH, this.o.ratePerS));
    if (page.length === 0) {
      progress.done = true;
      await this.saveProgress(job.id, progress);
      return;
    }
    let granted = 0;
    while (granted === 0 && !idle()) {
      const [grant] = await this.tokens.take([{ key: `${prefix}replay:rate`, limit: this.o.ratePerS, windowSeconds: 1, cost: page.length }]);
      granted = grant!.granted;
      if (granted === 0) await sleep(Math.max(10, Math.min(grant!.retryMs, 1_000)));
    }
    if (granted === 0) return;
    const slice = page.slice(0, granted);
    const events = await matches.events(job.tenant_id, slice.map((m) => m.event_id));
    const tasks: DeliveryTask[] = [];
    let skipped = 0;
    const createdAt = Date.parse(job.created_at);
    for (const m of slice) {
      const event: StoredEvent | undefined = events.get(m.event_id);
      // never deliver bytes other than the ones received
      const body = event && decodeStoredBody(event.body, event.body_sha256);
      if (!event || !body) {
        skipped += 1;
        continue;
      }
      tasks.push(taskOfStoredEvent(event, body, { delivery_id: derivedId('delivery', createdAt, `${job.id}/${m.delivery_id}`), tenant_id: job.tenant_id, destination_id: m.destination_id, replay_of: m.delivery_id, replay_job_id: job.id }));
    }
    const traces = new Map(slice.map((m) => [m.delivery_id, m.trace_id]));
    await queueReplays(this.o.replay, tasks, `replay job ${job.id}`, (task) => traces.get(task.replay_of!));
    const last = slice[slice.length - 1]!;
    progress.after_ms = last.at_ms;
    progress.after_id = last.delivery_id;
    progress.replayed += tasks.length;
    progress.skipped += skipped;
    await this.saveProgress(job.id, progress);
  }

  private async saveProgress(jobId: string, p: Progress): Promise<void> {
    const key = replayKeys(this.o.prefix, jobId).progress;
    await this.o.redis
      .multi()
      .hset(key, { after_ms: p.after_ms, after_id: p.after_id, done: p.done ? '1' : '0', replayed: p.replayed, skipped: p.skipped })
      .expire(key, PROGRESS_TTL_S)
      .exec();
  }

  /**
   * Writes progress over the job unless it stopped running meanwhile. A cancel sets its Redis
   * mark before it writes the job, and the mark is read after this write: when it is there,
   * the job is written cancelled again, so the last write is always the cancel's status.
   */
  private async persist(tenantId: string, jobId: string, patch: Partial<ReplayJob>): Promise<void> {
    const { store, redis, prefix } = this.o;
    const current = store.get('replay_job', tenantId, jobId);
    if (!current || current.status !== 'running') return;
    await store.update({ ...current, ...patch, updated_at: new Date().toISOString() });
    const cancelledAt = await redis.get(replayKeys(prefix, jobId).cancelled);
    if (cancelledAt !== null) {
      const now = store.get('replay_job', tenantId, jobId);
      if (now) await store.update({ ...now, status: 'cancelled', finished_at: now.finished_at ?? cancelledAt, updated_at: new Date().toISOString() });
    }
  }
}

/** Runs replay jobs in this process until the service stops. */
export function startReplayJobs(options: ReplayRunnerOptions, cleanups: (() => Promise<unknown>)[]): ReplayJobRunner {
  const runner = new ReplayJobRunner(options);
  runner.start();
  cleanups.push(() => runner.stop());
  return runner;
}
