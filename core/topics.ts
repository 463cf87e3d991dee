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
}

export function topicNames(prefix: string): Topics {
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
  };
}
