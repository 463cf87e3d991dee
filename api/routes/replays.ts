import express, { type Response, type Router } from 'express';
import type { Redis } from 'ioredis';
import { AppError, notFound, unprocessable } from '../../core/errors';
import { newId } from '../../core/ids';
import type { ApiKey, ReplayJob } from '../../core/model';
import type { ConfigStore } from '../../platform/config-store/config-store';
import type { ReplayMatches } from '../../platform/replay/job-matches';
import { markCancelled, replayKeys } from '../../platform/replay/job-progress';
import { authOf, requireResourceOf, requireScope } from '../auth';
import { pageOf } from '../paging';
import { validateBody } from '../validation';

/** Replay jobs one tenant may have running at once. */
export const MAX_RUNNING_REPLAYS = 3;
/** Most deliveries one job may replay; a wider range is refused, asking for a narrower one. */
export const MAX_REPLAY_MATCHES = 1_000_000;
/** Widest time range of one job. */
export const MAX_REPLAY_RANGE_DAYS = 31;

/** 2200-01-01: a range starting this late is beyond the stored times' type. */
const EARLIEST_UNREPRESENTABLE = Date.UTC(2200, 0, 1);

/** A body the ReplayCreate schema accepted. */
interface ReplayBody {
  from: string;
  to: string;
  destination_id?: string | null;
  status?: 'delivered' | 'failed' | null;
  event_type?: string | null;
}

/** A job as shown: its filter with every member, its progress; not its resume position. */
export function replayJobView(j: ReplayJob) {
  return {
    id: j.id,
    filter: { from: j.filter.from, to: j.filter.to, destination_id: j.filter.destination_id ?? null, status: j.filter.status ?? null, event_type: j.filter.event_type ?? null },
    status: j.status,
    matched: j.matched,
    replayed: j.replayed,
    delivered: j.delivered,
    failed: j.failed,
    skipped: j.skipped ?? 0,
    created_at: j.created_at,
    updated_at: j.updated_at,
    finished_at: j.finished_at,
    error: j.error,
  };
}

/** A key limited to resource ids sees the jobs of its destinations only. */
const visibleTo = (key: ApiKey, j: ReplayJob) => !key.resource_ids || (!!j.filter.destination_id && key.resource_ids.includes(j.filter.destination_id));

/** The filter of a create, checked whole (400), then against the tenant's data (422). */
function readCreate(body: unknown, key: ApiKey, store: ConfigStore): ReplayJob['filter'] {
  const check = validateBody<ReplayBody>('createReplay', body);
  check.done();
  const b = check.body;
  const from = Date.parse(b.from);
  const to = Date.parse(b.to);
  const problems: { field: string; message: string }[] = [];
  // what ClickHouse's DateTime64 holds, with room for a range after it
  if (from < 0 || from >= EARLIEST_UNREPRESENTABLE) problems.push({ field: 'from', message: 'must be from 1970 to 2199' });
  if (to <= from) problems.push({ field: 'to', message: 'must be later than from' });
  // matches are counted at the start: a range reaching past it would match what happens meanwhile
  else if (to > Date.now()) problems.push({ field: 'to', message: 'must not be later than now: a job replays what has happened, counted when it starts' });
  else if (to - from > MAX_REPLAY_RANGE_DAYS * 86_400_000) problems.push({ field: 'to', message: `must be at most ${MAX_REPLAY_RANGE_DAYS} days after from` });
  if (b.destination_id) {
    requireResourceOf(key, b.destination_id);
    if (!store.get('destination', key.tenant_id, b.destination_id)) problems.push({ field: 'destination_id', message: `no destination ${b.destination_id} in this tenant` });
  } else if (key.resource_ids) {
    problems.push({ field: 'destination_id', message: 'is required with a key limited to resource ids' });
  }
  if (problems.length > 0) throw unprocessable(problems);
  return {
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    destination_id: b.destination_id ?? null,
    status: b.status ?? null,
    event_type: b.event_type ?? null,
  };
}

/**
 * Replay jobs: every delivery whose latest attempt falls in a time range (and matches the
 * filter) is delivered again as a new delivery, in the background, by one API process at a
 * time (platform/replay/job-runner.ts). The job is an entity of the configuration, so every
 * process shows its progress.
 */
export function replaysRouter(store: ConfigStore, matches: ReplayMatches, redis: Redis, prefix: string, onCreate?: () => void): Router {
  const router = express.Router({ mergeParams: true });
  const find = (res: Response, id: string): ReplayJob => {
    const key = authOf(res);
    const j = store.get('replay_job', key.tenant_id, id);
    if (!j) throw notFound(`replay job ${id}`);
    if (!visibleTo(key, j)) requireResourceOf(key, j.filter.destination_id ?? id);
    return j;
  };

  router.get('/', requireScope('read:replays'), (req, res) => {
    const key = authOf(res);
    const all = store.list('replay_job', key.tenant_id).filter((j) => visibleTo(key, j));
    const { page, next_cursor } = pageOf(all, req.query);
    res.json({ replays: page.map(replayJobView), next_cursor });
  });

  router.post('/', requireScope('write:replays'), async (req, res) => {
    const key = authOf(res);
    const filter = readCreate(req.body, key, store);
    const running = store.list('replay_job', key.tenant_id).filter((j) => j.status === 'running').length;
    if (running >= MAX_RUNNING_REPLAYS) {
      throw new AppError('conflict', `this tenant already has ${running} replay jobs running, the most it may have; wait for one to finish or cancel one`);
    }
    const id = newId('replayJob');
    const matched = await matches.count(key.tenant_id, id, filter, MAX_REPLAY_MATCHES);
    if (matched > MAX_REPLAY_MATCHES) {
      throw unprocessable([{ field: 'to', message: `the range matches more than ${MAX_REPLAY_MATCHES} deliveries; replay a narrower range (or one destination, status or event type) at a time` }]);
    }
    const now = new Date().toISOString();
    const job: ReplayJob = {
      kind: 'replay_job',
      id,
      tenant_id: key.tenant_id,
      filter,
      status: 'running',
      matched,
      replayed: 0,
      delivered: 0,
      failed: 0,
      skipped: 0,
      error: null,
      created_by: key.id,
      created_at: now,
      updated_at: now,
      finished_at: null,
      resume: null,
    };
    await store.put(job);
    onCreate?.();
    res.status(202).location(`${req.baseUrl}/${id}`).json(replayJobView(job));
  });

  router.get('/:replayId', requireScope('read:replays'), (req, res) => {
    res.json(replayJobView(find(res, String(req.params.replayId))));
  });

  const notRunning = (j: ReplayJob) => new AppError('conflict', `replay job ${j.id} is ${j.status}; only a running job can be cancelled`);

  /**
   * Stops queuing; deliveries already queued still run, but the job counts no more. Its counts
   * are those at the cancel: every batch begun before it (one being sent is waited for), and the
   * outcomes ended by then. The job ends once: when its completion (or failure) reached the
   * config topic first, that stands everywhere and the cancel answers 409.
   */
  router.delete('/:replayId', requireScope('write:replays'), async (req, res) => {
    const j = find(res, String(req.params.replayId));
    if (j.status !== 'running') throw notRunning(j);
    const now = new Date().toISOString();
    const held = await markCancelled(redis, replayKeys(prefix, j.id), now);
    const outcomes = await matches.outcomes(j.tenant_id, j.id).catch(() => ({ delivered: j.delivered, failed: j.failed }));
    const cancelled: ReplayJob = {
      ...j,
      status: 'cancelled',
      replayed: Math.max(j.replayed, held.replayed ?? 0),
      skipped: Math.max(j.skipped ?? 0, held.skipped ?? 0),
      delivered: outcomes.delivered,
      failed: outcomes.failed,
      finished_at: now,
      updated_at: now,
    };
    const { applied, standing } = await store.updateUnlessFinal(cancelled);
    if (standing?.kind !== 'replay_job') throw notFound(`replay job ${j.id}`);
    if (!applied) throw notRunning(standing);
    res.json(replayJobView(standing));
  });

  return router;
}
