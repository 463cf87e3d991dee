/** Names of the topics, each behind the deployment's TOPIC_PREFIX. */
export interface Topics {
  config: string;
  schemas: string;
  received: string;
  validated: string;
  filtered: string;
  transitions: string;
  deliveryRequested: string;
  deliveryCompleted: string;
  deliveryDlq: string;
  /**
   * Deliveries of paused or disabled destinations, keyed by destination id like
   * deliveryRequested: kept here, in the order they were held, until their destination is active.
   */
  deliveryHeld: string;
  /** Input records a stage could not handle (schemas/dead-letter.avsc), so that their partition goes on. */
  eventsDlq: string;
  /** Dead letters of events.dlq replayed (schemas/dead-letter-replay.avsc): written by the API and the command line, so a letter is put back once. */
  eventsDlqReplays: string;
  logs: string;
  /** The evidence log itself: sealed batches of leaves with their signed checkpoints, kept forever. */
  evidenceLeaves: string;
  /** Delay tiers, shortest first: a record waits in its tier for the tier's delay. */
  retryTiers: { delayMs: number; topic: string }[];
}

/** 1500 -> "1500ms", 5000 -> "5s", 300000 -> "5m": the suffix of a tier's topic name. */
export function tierLabel(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1_000 === 0) return `${ms / 1_000}s`;
  return `${ms}ms`;
}

export const DEFAULT_RETRY_TIERS_MS = [1_000, 5_000, 30_000, 300_000, 1_800_000, 7_200_000, 18_000_000];

export function topicNames(prefix: string, tiersMs: number[] = DEFAULT_RETRY_TIERS_MS): Topics {
  const t = (name: string) => `${prefix}${name}`;
  return {
    config: t('config'),
    schemas: t('_schemas'),
    received: t('webhooks.received'),
    validated: t('webhooks.validated'),
    filtered: t('webhooks.filtered'),
    transitions: t('events.transitions'),
    deliveryRequested: t('deliveries.requested'),
    deliveryCompleted: t('deliveries.completed'),
    deliveryDlq: t('deliveries.dlq'),
    deliveryHeld: t('deliveries.held'),
    eventsDlq: t('events.dlq'),
    eventsDlqReplays: t('events.dlq.replays'),
    logs: t('logs'),
    evidenceLeaves: t('evidence.leaves'),
    retryTiers: [...tiersMs].sort((a, b) => a - b).map((delayMs) => ({ delayMs, topic: t(`deliveries.retry.${tierLabel(delayMs)}`) })),
  };
}

/** The consumer groups of the pipeline, each `<groupPrefix><name>`. */
export const CONSUMER_NAMES = ['validate', 'filter', 'route', 'deliver', 'release', 'retry', 'evidence-sequencer', 'sink'] as const;
export type ConsumerName = (typeof CONSUMER_NAMES)[number];

/** One consumer group: what it reads, what it may write, and the process stage (`STAGES`) that runs it. */
export interface ConsumerSpec {
  name: ConsumerName;
  stage: 'validate' | 'filter' | 'route' | 'deliver' | 'retry' | 'evidence' | 'sink';
  reads: string[];
  /** Topics its outputs may go to; the runner refuses any other. */
  writes: string[];
  /**
   * Set when the stage runs inside that consumer's group, handed its input straight from the
   * stage before it (chainStages) rather than reading it back from its topic: no group of its own.
   */
  within?: ConsumerName;
}

/**
 * Who reads which topic and writes which: the one table the runners, the live checks, the
 * benchmarks and the docs' test read. Log lines go to `logs` from every process through the
 * logger, not as stage outputs, so no consumer lists it under `writes`.
 */
export function consumers(topics: Topics): ConsumerSpec[] {
  const tiers = topics.retryTiers.map((t) => t.topic);
  return [
    { name: 'validate', stage: 'validate', reads: [topics.received], writes: [topics.validated, topics.transitions, topics.eventsDlq] },
    // filter and route run in validate's group: each validated event goes on to them in the same
    // pass, and its validated and filtered records are still written, one per state
    { name: 'filter', stage: 'filter', reads: [topics.validated], writes: [topics.filtered, topics.transitions, topics.eventsDlq], within: 'validate' },
    { name: 'route', stage: 'route', reads: [topics.filtered], writes: [topics.deliveryRequested, topics.eventsDlq], within: 'validate' },
    { name: 'deliver', stage: 'deliver', reads: [topics.deliveryRequested], writes: [topics.deliveryCompleted, topics.transitions, topics.deliveryDlq, topics.deliveryHeld, ...tiers, topics.eventsDlq] },
    // runs beside deliver: puts held deliveries back once their destination is active again, and
    // fails those of a destination deleted meanwhile as deliver would
    { name: 'release', stage: 'deliver', reads: [topics.deliveryHeld], writes: [topics.deliveryRequested, topics.deliveryCompleted, topics.transitions, topics.deliveryDlq, topics.eventsDlq] },
    { name: 'retry', stage: 'retry', reads: tiers, writes: [topics.deliveryRequested, ...tiers, topics.eventsDlq] },
    // one member of the group reads every partition (pipeline/evidence/one-owner.ts): the log has one writer
    { name: 'evidence-sequencer', stage: 'evidence', reads: [topics.deliveryCompleted], writes: [topics.evidenceLeaves, topics.eventsDlq] },
    // a stage's output record is the record of the state it enters: the sink derives the state rows
    // of received, validated and filtered events, delivered attempts and acked (sealed) deliveries
    // from those records, so only the other states travel on events.transitions; the dead letters
    // of every stage and their replays are listed from its copies too
    { name: 'sink', stage: 'sink', reads: [topics.received, topics.validated, topics.filtered, topics.transitions, topics.deliveryCompleted, topics.logs, topics.evidenceLeaves, topics.eventsDlq, topics.eventsDlqReplays], writes: [] },
  ];
}

/**
 * The topics a dead letter may be put back on: the inputs of the pipeline's stages (never the
 * configuration, the evidence log or another topic a letter might name), so that the stage that
 * set the record aside handles it again.
 */
export function replayableTopics(topics: Topics): string[] {
  return [...new Set(consumers(topics).filter((c) => c.name !== 'sink').flatMap((c) => c.reads))];
}

/** The consumers with a group of their own: what the live checks measure lag and members of. */
export function consumerGroups(topics: Topics): ConsumerSpec[] {
  return consumers(topics).filter((c) => !c.within);
}

export function consumerSpec(topics: Topics, name: ConsumerName): ConsumerSpec {
  const spec = consumers(topics).find((c) => c.name === name);
  if (!spec) throw new Error(`no consumer ${name}`);
  return spec;
}

/** The prefix of every consumer group of a deployment with this TOPIC_PREFIX. */
export function groupPrefixOf(topicPrefix: string): string {
  return `${topicPrefix}hookline.`;
}

/** The consumer group id of a consumer under a deployment's group prefix. */
export function groupIdOf(groupPrefix: string, name: string): string {
  return `${groupPrefix}${name}`;
}

/**
 * The transactional id every evidence sequencer of a deployment appends with, named as its group:
 * the broker lets one producer hold it at a time, so a sequencer that takes the log over fences
 * the one before (pipeline/evidence/log-writer.ts).
 */
export function evidenceWriterIdOf(groupPrefix: string): string {
  return groupIdOf(groupPrefix, 'evidence-sequencer');
}

/** A record stage's name, input and declared outputs, as the consumer table has them. */
export function stageIo<N extends string>(topics: Topics, name: ConsumerName, record: N): { name: ConsumerName; input: { topic: string; record: N }; writes: string[] } {
  const spec = consumerSpec(topics, name);
  if (spec.reads.length !== 1) throw new Error(`consumer ${name} reads ${spec.reads.length} topics, not one`);
  return { name, input: { topic: spec.reads[0]!, record }, writes: spec.writes };
}
