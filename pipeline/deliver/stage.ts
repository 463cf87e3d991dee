import { blankOutcome } from './outcome';
import { HOPS_HEADER } from '../../core/hops';
import type { Destination, Tenant } from '../../core/model';
import { stageIo, type Topics } from '../../core/topics';
import { signStandardWebhook } from '../../core/signing/standard-webhooks';
import type { Logger } from '../../core/log';
import type { DeliveryOutcome, DeliveryTask } from '../../platform/avro/records';
import type { AnyOutput, RecordStage, StageContext } from '../runtime/stage';
import { transition } from '../transitions';
import { DestinationUnhealthy, isOpenBreaker, peerReopensAt, type Breakers } from './breakers';
import { decide, parseRetryAfter, type AttemptResult, type Decision } from './decide';
import { sendErrorMessage, type HttpSender, type SendResult } from './http-sender';
import { delayTopicFor } from './delay';
import { OUTCOME_LINES, outcomeLineFields } from './lines';
import { authHeader } from '../../core/destination-auth';
import { changedMembers } from '../../core/destination-changes';
import { holdTask, isHeld } from './hold';
import type { OrderedLines } from './ordered-lines';
import { attemptKey, type AttemptMarks, type FinishedAttempt } from './attempt-marks';
import { deliveryKey, keptKey } from '../../core/record-keys';
import { Pacer } from './pace';
import { sha256Hex } from '../../core/stored-body';
import { isBroker, renderTemplate, type KafkaConfig } from '../../core/destination-types';
import { PublishFailed, type OutboundMessage, type Publisher } from './publishers/publisher';
import { asReceived, bodyValue, prepare, type Prepared } from './transform/apply';
import type { Transformer } from './transform/transformer';
import { recordDelivery, type DeliveryOutcomeLabel } from '../../platform/metrics/metrics';
import { TRACEPARENT, TRACESTATE, traceIdOf, type TraceHeaders } from '../../platform/tracing/trace-context';
import { SPAN_ATTRIBUTES, SpanKind, SpanStatusCode, type Span } from '../../platform/tracing/tracing';

/** How often a task whose attempt another process has claimed looks for that attempt's mark. */
const CLAIM_POLL_MS = 100;

/** What delivery needs of the configuration. */
export interface DestinationPort {
  get(kind: 'destination', tenantId: string, id: string): Destination | undefined;
  /** The tenant: a suspended tenant's deliveries are held like a paused destination's. */
  tenant?(tenantId: string): Tenant | undefined;
  /**
   * Marks the destination disabled (410 Gone): its versions before and after; undefined when it
   * was deleted, or already disabled, meanwhile.
   */
  disable(destination: Destination, reason: string): Promise<{ before: Destination; after: Destination } | undefined>;
}

/**
 * Tells the tenant what happened to its deliveries (operational events): best effort, never
 * rejects. Each decides itself whether the happening makes an event (subscriptions, no loops,
 * the rate bound).
 */
export interface HappeningsPort {
  destinationDisabled(destination: Destination, reason: string, cause: DeliveryTask): Promise<unknown>;
  deliveryExhausted(task: DeliveryTask, destination: Destination, reason: string): Promise<unknown>;
}

export interface DeliverDeps {
  topics: Topics;
  destinations: DestinationPort;
  sender: HttpSender;
  breakers: Breakers;
  defaultSchedule: number[];
  /** True when the sender refused the target (SSRF guard): never worth a retry. */
  isRefusal(err: unknown): boolean;
  /** Keeps destinations' rate limits; unset, rate_limit_per_s is not enforced. */
  pacer?: Pacer;
  /** Operational events of disabled destinations and exhausted deliveries; unset, none. */
  happenings?: HappeningsPort;
  /** How long an ordered destination's delivery may wait in line (pipeline/deliver/ordered-lines.ts); unset, it never does. */
  lines?: OrderedLines;
  /** Claims and marks of attempts, so that a task read again for any reason is not sent again; unset, none (at-least-once). */
  marks?: AttemptMarks;
  /** Sends to broker destinations (kafka, amqp, nats, mqtt); unset, their attempts fail saying so. */
  publisher?: Publisher;
  /** Runs destinations' transformations; unset, a destination with one fails its attempts saying so. */
  transformer?: Transformer;
  /** Longest a broker may take to acknowledge a message (DELIVERY_TIMEOUT_MS). */
  publishTimeoutMs?: number;
  /** Longest a task waits for another process's claimed attempt before making it itself (default 30 s; claims expire sooner). */
  claimWaitMs?: number;
  now?: () => number;
}

function isResponse(v: unknown): v is SendResult {
  return typeof v === 'object' && v !== null && typeof (v as { status?: unknown }).status === 'number' && typeof (v as { headers?: unknown }).headers === 'object';
}

/** One signature per secret that signs now: after a rotation, the old one too until it expires. */
function signatureHeader(destination: Destination, task: DeliveryTask, body: Buffer, timestamp: number, nowMs: number): string {
  const signature = signStandardWebhook(destination.signing_secret, task.delivery_id, timestamp, body);
  const previous = destination.previous_signing_secret;
  const until = destination.previous_secret_expires_at ? Date.parse(destination.previous_secret_expires_at) : NaN;
  if (!previous || !(nowMs < until)) return signature;
  return `${signature} ${signStandardWebhook(previous, task.delivery_id, timestamp, body)}`;
}

/**
 * The Standard Webhooks headers, the original content type, the correlation id, the trace context
 * of the delivery's span (so that the receiver can join the trace; the signature covers only the
 * id, the timestamp and the body) and the destination's credentials.
 */
export function outboundHeaders(task: DeliveryTask, destination: Destination, nowMs: number, trace?: TraceHeaders, sent?: Prepared): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  const body = sent?.body ?? task.body;
  const headers: Record<string, string> = {
    // the transformation's headers first: the service's own below replace any of the same name
    ...sent?.headers,
    'content-type': (sent ? sent.content_type : task.content_type) ?? 'application/octet-stream',
    'webhook-id': task.delivery_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(destination, task, body, timestamp, nowMs),
    'x-correlation-id': task.correlation_id,
    // the receiver may be another Hook URL of this service: its count stops a loop
    [HOPS_HEADER]: String((task.hops ?? 0) + 1),
    'user-agent': 'hookline/0.1',
  };
  if (trace) {
    headers[TRACEPARENT] = trace.traceparent;
    if (trace.tracestate) headers[TRACESTATE] = trace.tracestate;
  }
  // the credentials the receiver asked for; their name is never one of the headers above (a
  // broker's are its login, never a header)
  if (destination.auth && !isBroker(destination)) {
    const [name, value] = authHeader(destination.auth);
    headers[name] = value;
  }
  return headers;
}

/** What one attempt of a delivery (or a decision without one) gives out. */
interface Step {
  /** Every output but the task's wait on the delay topics. */
  outputs: AnyOutput[];
  /** The task as it is to wait until its `not_before`, when it waits. */
  waits?: DeliveryTask;
  /** The attempt got a 2xx. */
  delivered: boolean;
}

/** The URL a webhook attempt goes to: the destination's, its path and query replaced when the transformation gave one. */
function targetUrl(destination: Destination, sent: Prepared): string {
  if (!sent.path) return destination.url;
  const url = new URL(destination.url);
  const path = new URL(sent.path, 'http://path.invalid');
  url.pathname = path.pathname;
  url.search = path.search;
  return url.href;
}

/** A broker message's key: the kafka config's template over the delivery, else the event id. */
function messageKey(task: DeliveryTask, destination: Destination, sent: Prepared): string {
  const template = destination.type === 'kafka' ? (destination.config as KafkaConfig | null | undefined)?.key : undefined;
  if (!template) return task.event_id;
  // the body is parsed only for a template that reads it
  const body = template.includes('body') ? bodyValue(sent.body, sent.content_type) : undefined;
  return renderTemplate(template, { event_id: task.event_id, delivery_id: task.delivery_id, destination_id: task.destination_id, tenant_id: task.tenant_id, body });
}

/** The metrics' name for what an attempt came to. */
function outcomeLabel(result: AttemptResult, decision: Decision): DeliveryOutcomeLabel {
  switch (decision.action) {
    case 'delivered':
      return 'delivered';
    case 'retry':
      return 'retrying';
    case 'wait':
      return 'breaker_open';
    case 'dead':
      if (decision.disableDestination) return 'gone';
      return result.kind === 'error' && result.refused ? 'refused' : 'exhausted';
  }
}

/** What the attempt of a delivery's span came to: the answer, or the failure, and the decision. */
function noteAttempt(span: Span, destination: Destination, result: AttemptResult, decision: Decision): void {
  span.setAttributes({
    [SPAN_ATTRIBUTES.outcome]: decision.action === 'delivered' ? 'delivered' : decision.action === 'dead' ? 'failed' : decision.action === 'retry' ? 'retrying' : 'waiting',
    ...(isBroker(destination) ? { 'messaging.system': destination.type } : { 'http.request.method': 'POST' }),
    // the host only: a destination's path and query may hold its credentials
    'server.address': URL.parse(destination.url)?.hostname ?? '',
  });
  if (result.kind === 'response') span.setAttribute('http.response.status_code', result.status);
  else if (result.kind === 'error') span.setAttribute('error.type', result.refused ? 'refused' : 'request_failed');
  else span.setAttribute('error.type', 'breaker_open');
  if (result.kind !== 'breaker-open' && decision.action !== 'delivered') span.setStatus({ code: SpanStatusCode.ERROR, message: decision.reason });
}

/**
 * One attempt of one delivery, then what follows it: the outcome record, the state
 * transitions, and the task's next stop (a delay topic, the dead-letter topic, or nothing).
 */
export function deliverStage(deps: DeliverDeps): RecordStage<'DeliveryTask'> {
  const { topics } = deps;
  const now = deps.now ?? Date.now;

  /** An attempt the destination's open breaker (here, or in a peer) did not let out. */
  const breakerOpen = (err: unknown, destination: Destination): AttemptResult => ({ kind: 'breaker-open', reopensAt: peerReopensAt(err) ?? deps.breakers.reopensAt(destination.id) });

  /** One message to a broker destination, acknowledged; a failure that is not a refusal tells of the broker's health. */
  async function publish(task: DeliveryTask, destination: Destination, trace: TraceHeaders | undefined, sent: Prepared): Promise<{ result: AttemptResult; durationMs: number }> {
    const started = now();
    try {
      await deps.breakers.run(destination, async () => {
        if (!deps.publisher) throw new DestinationUnhealthy(`this process cannot deliver to ${destination.type} destinations`);
        const message: OutboundMessage = { key: messageKey(task, destination, sent), headers: outboundHeaders(task, destination, now(), trace, sent), body: sent.body };
        try {
          return await deps.publisher.publish(destination, message, deps.publishTimeoutMs ?? 30_000);
        } catch (err) {
          if (err instanceof PublishFailed && err.refused) throw err;
          throw new DestinationUnhealthy(err instanceof Error ? err.message : String(err), { cause: err });
        }
      });
      return { result: { kind: 'acked' }, durationMs: now() - started };
    } catch (err) {
      const durationMs = now() - started;
      if (isOpenBreaker(err)) return { result: breakerOpen(err, destination), durationMs };
      const refused = err instanceof PublishFailed && err.refused;
      return { result: { kind: 'error', message: err instanceof Error ? err.message : String(err), refused }, durationMs };
    }
  }

  async function attempt(task: DeliveryTask, destination: Destination, trace: TraceHeaders | undefined, sent: Prepared): Promise<{ result: AttemptResult; durationMs: number; responseBody?: Buffer }> {
    if (isBroker(destination)) return publish(task, destination, trace, sent);
    const started = now();
    try {
      const res = await deps.breakers.run(destination, async () => {
        let r: Awaited<ReturnType<HttpSender['send']>>;
        try {
          r = await deps.sender.send({ url: targetUrl(destination, sent), ...(sent.method ? { method: sent.method } : {}), headers: outboundHeaders(task, destination, now(), trace, sent), body: sent.body });
        } catch (err) {
          // a refused target says nothing of the destination's health; a timeout or a reset does
          if (deps.isRefusal(err)) throw err;
          throw new DestinationUnhealthy(sendErrorMessage(err, destination.url), { cause: err });
        }
        if (r.status >= 500 || r.status === 429 || r.status === 408) throw new DestinationUnhealthy(`status ${r.status}`, { cause: r });
        return r;
      });
      return { result: { kind: 'response', status: res.status, retryAfterMs: null }, durationMs: res.durationMs, responseBody: res.body };
    } catch (err) {
      const durationMs = now() - started;
      if (isOpenBreaker(err)) return { result: breakerOpen(err, destination), durationMs };
      if (err instanceof DestinationUnhealthy && isResponse(err.cause)) {
        const r = err.cause;
        return { result: { kind: 'response', status: r.status, retryAfterMs: parseRetryAfter(r.headers['retry-after'], now()) }, durationMs: r.durationMs, responseBody: r.body };
      }
      const cause = err instanceof DestinationUnhealthy ? err.cause : err;
      return { result: { kind: 'error', message: sendErrorMessage(cause, destination.url), refused: deps.isRefusal(cause) }, durationMs };
    }
  }

  /** Attempts of this process under way (claimed, or being made), by attemptKey: a twin of one (the same task read twice) waits for it. */
  const running = new Map<string, Promise<FinishedAttempt | undefined>>();

  /** An attempt as made: what it came to and, when a transformation changed the body, the SHA-256 of the one sent; or dropped by the transformation. */
  type Made = { result: AttemptResult; durationMs: number; responseBody?: Buffer; sentSha256?: string } | { dropped: true };

  /**
   * The attempt of what the destination's transformation makes of the task (without one, the
   * task's own body): a failed transformation is a failed attempt that sent nothing, and never
   * tells of the receiver's health.
   */
  async function attemptPrepared(task: DeliveryTask, destination: Destination, trace: TraceHeaders | undefined): Promise<Made> {
    const made = destination.transformation ? await prepare(destination, task, deps.transformer) : asReceived(task);
    if (made.kind === 'drop') return { dropped: true };
    if (made.kind === 'fail') return { result: { kind: 'error', message: `transformation failed: ${made.error}`, refused: false }, durationMs: 0 };
    const done = await attempt(task, destination, trace, made.sent);
    return made.sent.body === task.body ? done : { ...done, sentSha256: sha256Hex(made.sent.body) };
  }

  /**
   * The attempt of a task already made (by this process or another), or undefined with the
   * attempt claimed for the caller (or Redis unable to say: at-least-once). Every task is
   * claimed, not only the ones a rebalance made uncertain: a task can be read again in ways the
   * consumer cannot see (the same generation fetching again after a failed request, an old owner
   * handling what the group gave a new one). An attempt another process is making is waited for
   * outside the destination's places, until its mark comes or its claim expires.
   */
  async function claimed(marks: AttemptMarks, task: DeliveryTask, ctx: StageContext): Promise<FinishedAttempt | undefined> {
    const until = now() + (deps.claimWaitMs ?? 30_000);
    for (;;) {
      const claim = await marks.claim(task);
      if (claim.kind === 'finished') return claim.attempt;
      if (claim.kind !== 'running') return undefined;
      // its owner's mark follows, or its claim expires (the owner died): this wait concerns no receiver
      ctx.releasePlace?.();
      if (now() > until) {
        ctx.log.warn('an attempt claimed by another process neither finished nor expired in time; attempting it', { delivery_id: task.delivery_id, attempt: task.attempt, owner: claim.owner });
        return undefined;
      }
      await new Promise((r) => setTimeout(r, CLAIM_POLL_MS));
    }
  }

  /**
   * One attempt, claimed before it is sent and marked once it has finished (with marks), or the
   * attempt as made before (`earlier`): a twin read meanwhile in this process, even while the
   * claim is asked or the transformation runs, waits for it. An attempt that sent nothing lets
   * go of its claim, so the task's later turn (an open breaker's wait) can claim it again.
   */
  async function attemptOnce(task: DeliveryTask, destination: Destination, ctx: StageContext, attemptedAt: number): Promise<{ made: Made; earlier?: FinishedAttempt }> {
    const marks = deps.marks;
    if (!marks) return { made: await attemptPrepared(task, destination, ctx.trace) };
    const key = attemptKey(task);
    for (let twin = running.get(key); twin; twin = running.get(key)) {
      const done = await twin;
      if (done) return { made: done, earlier: done };
    }
    let settle!: (done: FinishedAttempt | undefined) => void;
    const mine = new Promise<FinishedAttempt | undefined>((resolve) => (settle = resolve));
    running.set(key, mine);
    let done: FinishedAttempt | undefined;
    try {
      const before = await claimed(marks, task, ctx);
      if (before) {
        done = before;
        return { made: before, earlier: before };
      }
      const made = await attemptPrepared(task, destination, ctx.trace);
      if (!('dropped' in made) && made.result.kind !== 'breaker-open') {
        done = { result: made.result, durationMs: made.durationMs, attemptedAt, ...(made.responseBody ? { responseBody: made.responseBody } : {}), ...(made.sentSha256 ? { sentSha256: made.sentSha256 } : {}) };
        marks.note(task, done);
      }
      return { made };
    } finally {
      running.delete(key);
      if (!done) marks.release(task);
      settle(done);
    }
  }

  /**
   * The outputs that follow an attempt's decision. An attempt that has an outcome record prints its
   * line only: the sink writes that line's row in the logs table from the outcome (OUTCOME_LINES),
   * so the attempt costs no record on the `logs` topic. A wait on an open breaker has no outcome
   * and logs as usual.
   */
  function followUp(task: DeliveryTask, key: string, decision: Decision, log: Logger, fields: Record<string, unknown>, outcome: DeliveryOutcome | null): Step {
    const event = { event_id: task.event_id, tenant_id: task.tenant_id, ingester_id: task.ingester_id, correlation_id: task.correlation_id };
    const ids = { delivery_id: task.delivery_id, destination_id: task.destination_id };
    if (outcome) {
      const line = OUTCOME_LINES[outcome.status];
      log.printOnly(line.level, line.msg, { ...fields, ...outcomeLineFields(outcome) });
    }
    switch (decision.action) {
      case 'delivered':
        // the outcome record (status delivered) is the record of the `delivered` transition
        return { outputs: [], delivered: true };
      case 'retry':
      case 'wait': {
        // the next attempt takes a slot of its own when its wait is over
        const next: DeliveryTask = { ...task, attempt: decision.action === 'retry' ? decision.attempt : task.attempt, not_before: decision.at, slot_at: null };
        if (!outcome) log.info('breaker open; delivery waits', { ...fields, reason: decision.reason, next_attempt_at: new Date(decision.at).toISOString() });
        return { outputs: [], waits: next, delivered: false };
      }
      case 'dead':
        return {
          outputs: [
            transition(topics, event, 'failed', { ...ids, reason: decision.reason }),
            transition(topics, event, 'dlq_queued', { ...ids, reason: decision.reason }),
            { topic: topics.deliveryDlq, key, record: 'DeliveryTask', value: task },
          ],
          delivered: false,
        };
    }
  }

  /** The step's outputs, its wait included: the task on the delay topic for what is left of it. */
  const settle = (step: Step, key: string): AnyOutput[] =>
    step.waits ? [...step.outputs, { topic: delayTopicFor(topics, step.waits.not_before - now()), key, record: 'DeliveryTask', value: step.waits }] : step.outputs;

  /**
   * One attempt of the delivery, or what stands in for it: a wait (the task came back early, its
   * send slot is far, the breaker is open), a hold (the destination is paused or disabled), or
   * failing it (the destination is gone).
   */
  async function once(input: DeliveryTask, key: string, ctx: StageContext): Promise<Step> {
    const { log, trace, span } = ctx;
    let task = input;
    const fields = { tenant_id: task.tenant_id, event_id: task.event_id, delivery_id: task.delivery_id, destination_id: task.destination_id, correlation_id: task.correlation_id, trace_id: traceIdOf(trace), attempt: task.attempt };
    // a task that came back early waits in the delay topics, not here
    if (task.not_before > now() + 50) {
      span?.setAttribute(SPAN_ATTRIBUTES.outcome, 'waiting');
      return { outputs: [], waits: task, delivered: false };
    }
    const destination = deps.destinations.get('destination', task.tenant_id, task.destination_id);
    if (destination && isHeld(destination, deps.destinations.tenant?.(task.tenant_id))) {
      log.info(destination.status === 'active' ? 'tenant suspended; delivery held' : `destination ${destination.status}; delivery held`, fields);
      recordDelivery('held');
      span?.setAttribute(SPAN_ATTRIBUTES.outcome, 'held');
      return { outputs: [holdTask(topics, task, key)], delivered: false };
    }
    if (destination && deps.pacer && Pacer.limits(destination)) {
      const paced = await deps.pacer.pace(task, destination);
      if (paced.action === 'wait') {
        log.debug('delivery waits for its send slot', { ...fields, reason: paced.reason, slot_at: paced.task.slot_at });
        recordDelivery('paced');
        span?.setAttribute(SPAN_ATTRIBUTES.outcome, 'waiting');
        return { outputs: [], waits: paced.task, delivered: false };
      }
      task = paced.task;
    }
    const attemptedAt = now();
    const outcome: DeliveryOutcome = blankOutcome(task, attemptedAt);
    if (!destination || destination.status !== 'active') {
      const reason = destination ? `the destination is ${destination.status}${destination.disabled_reason ? `: ${destination.disabled_reason}` : ''}` : 'the destination no longer exists';
      outcome.error_message = reason;
      recordDelivery('inactive');
      span?.setAttribute(SPAN_ATTRIBUTES.outcome, 'failed');
      const dead = followUp(task, key, { action: 'dead', reason, disableDestination: false }, log, fields, outcome);
      return { ...dead, outputs: [{ topic: topics.deliveryCompleted, key, record: 'DeliveryOutcome', value: outcome }, ...dead.outputs] };
    }
    // what is sent: the body as received, or as the destination's transformation makes it; or,
    // for a task read again (for whatever reason), the attempt made before
    const { made, earlier: marked } = await attemptOnce(task, destination, ctx, attemptedAt);
    if (marked) {
      log.info('attempt already made; its outcome is written again without sending it again', { ...fields, attempted_at: new Date(marked.attemptedAt).toISOString() });
      outcome.attempted_at = marked.attemptedAt;
    }
    if ('dropped' in made) {
      outcome.status = 'dropped';
      outcome.error_message = 'the destination\'s transformation returned null: nothing was sent';
      recordDelivery('dropped');
      span?.setAttribute(SPAN_ATTRIBUTES.outcome, 'dropped');
      const line = OUTCOME_LINES.dropped;
      log.printOnly(line.level, line.msg, { ...fields, ...outcomeLineFields(outcome) });
      return { outputs: [{ topic: topics.deliveryCompleted, key, record: 'DeliveryOutcome', value: outcome }], delivered: false };
    }
    const { result, durationMs, responseBody } = made;
    // the attempt row and the evidence leaf carry the SHA-256 of the body actually sent
    if (made.sentSha256) outcome.body_sha256 = made.sentSha256;
    const schedule = destination.retry_schedule_ms ?? deps.defaultSchedule;
    const decision = decide(result, task.attempt, schedule, now());
    if (span) noteAttempt(span, destination, result, decision);
    if (result.kind === 'breaker-open') {
      recordDelivery('breaker_open');
      return followUp(task, key, decision, log, fields, null);
    }
    // an outcome written again from its mark was counted when the attempt was made
    if (!marked) recordDelivery(outcomeLabel(result, decision), durationMs / 1000);

    outcome.duration_ms = durationMs;
    outcome.response_code = result.kind === 'response' ? result.status : null;
    // UTF-8 with invalid sequences replaced (U+FFFD); no answer, no body
    outcome.response_body = result.kind === 'response' ? (responseBody ?? Buffer.alloc(0)).toString('utf8') : null;
    outcome.status = decision.action === 'delivered' ? 'delivered' : decision.action === 'retry' ? 'retrying' : 'failed';
    outcome.error_message = decision.action === 'delivered' ? null : decision.action === 'dead' || decision.action === 'retry' ? decision.reason : null;
    outcome.next_attempt_at = decision.action === 'retry' ? decision.at : null;
    if (decision.action === 'dead') {
      // the failure path only: a delivered attempt never gets here
      const disabled = decision.disableDestination ? await deps.destinations.disable(destination, decision.reason) : undefined;
      if (disabled) {
        // the outcome carries the change to the sink, which writes it into the destination's history
        outcome.destination_change = JSON.stringify(changedMembers(disabled.before, disabled.after));
        await deps.happenings?.destinationDisabled(destination, decision.reason, task);
      }
      if (decision.exhausted) await deps.happenings?.deliveryExhausted(task, destination, decision.reason);
    }
    const next = followUp(task, key, decision, log, fields, outcome);
    return { ...next, outputs: [{ topic: topics.deliveryCompleted, key, record: 'DeliveryOutcome', value: outcome }, ...next.outputs] };
  }

  /**
   * A delivery to an ordered destination, which the runner gives one at a time: each wait that
   * ends soon enough (OrderedLines) is spent here, the deliveries behind it waiting, and the next
   * attempt made in line; the outputs of every attempt go out together when its turn ends. A
   * longer wait, a broken line or a stopping process sends it to the delay topics as any other.
   */
  async function inLine(first: Step, destinationId: string, since: number, key: string, ctx: StageContext, lines: OrderedLines): Promise<AnyOutput[]> {
    const outputs: AnyOutput[] = [];
    let step = first;
    while (step.waits && lines.mayWait(destinationId, since, step.waits.not_before)) {
      const next = step.waits;
      outputs.push(...step.outputs);
      if (!(await lines.wait(next.not_before - now()))) {
        step = { outputs: [], waits: next, delivered: false };
        break;
      }
      step = await once(next, key, ctx);
    }
    if (step.delivered) lines.delivered(destinationId);
    else if (step.waits) {
      if (!lines.isBroken(destinationId)) ctx.log.warn('delivery leaves its ordered line: later deliveries go ahead of it', { tenant_id: step.waits.tenant_id, destination_id: destinationId, delivery_id: step.waits.delivery_id, event_id: step.waits.event_id, attempt: step.waits.attempt, next_attempt_at: new Date(step.waits.not_before).toISOString() });
      lines.left(destinationId);
    }
    return [...outputs, ...settle(step, key)];
  }

  return {
    kind: 'record',
    ...stageIo(topics, 'deliver', 'DeliveryTask'),
    // its span covers the outbound request
    spanKind: SpanKind.CLIENT,
    async handle(input: DeliveryTask, ctx): Promise<AnyOutput[]> {
      const since = now();
      const destination = deps.destinations.get('destination', input.tenant_id, input.destination_id);
      // every record of a delivery keeps the key its task was written with (core/record-keys.ts)
      const key = keptKey(ctx.source.key, () => deliveryKey(input, destination));
      const step = await once(input, key, ctx);
      if (destination?.ordered === true && deps.lines) return inLine(step, destination.id, since, key, ctx, deps.lines);
      return settle(step, key);
    },
  };
}
