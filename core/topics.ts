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
  /** Input records a stage could not handle (schemas/dead-letter.avsc), so that their partition goes on. */
  eventsDlq: string;
  logs: string;
  /** Delivery outcomes handed to the evidence sequencer (one partition: one sequencer). */
  evidencePending: string;
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
    eventsDlq: t('events.dlq'),
    logs: t('logs'),
    evidencePending: t('evidence.pending'),
    evidenceLeaves: t('evidence.leaves'),
    retryTiers: [...tiersMs].sort((a, b) => a - b).map((delayMs) => ({ delayMs, topic: t(`deliveries.retry.${tierLabel(delayMs)}`) })),
  };
}
