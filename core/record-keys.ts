/**
 * How the records of the event and delivery topics are keyed, and so which partition each lands
 * on. By event: the webhooks of one Hook URL and the deliveries to one destination spread over
 * every partition, so that more partitions and more processes serve even a single busy ingester
 * or destination. By ingester or destination only where the tenant asks for order (`ordered`):
 * then all of its records share one partition, read by one process at a time.
 */

/** The key of an event's records where no order is asked for: its transitions', and by default its webhook and delivery records'. */
export function eventKey(e: { tenant_id: string; event_id: string }): string {
  return `${e.tenant_id}/${e.event_id}`;
}

/** The key of an event on webhooks.received, .validated and .filtered: its ingester's when that ingester is ordered. */
export function webhookKey(e: { tenant_id: string; ingester_id: string; event_id: string }, ingester: { ordered?: boolean } | undefined): string {
  return ingester?.ordered === true ? `${e.tenant_id}/${e.ingester_id}` : eventKey(e);
}

/**
 * The key of a new delivery's task (routed, retried through the API, replayed): its destination's
 * id when that destination is ordered. Every later record of the delivery (its waits on the delay
 * topics, its outcomes, its dead letter, a hold) keeps the key its task was written with
 * ({@link keptKey}), so a delivery's records share a partition whatever the setting says later.
 */
export function deliveryKey(task: { tenant_id: string; event_id: string; destination_id: string }, destination: { ordered?: boolean } | undefined): string {
  return destination?.ordered === true ? task.destination_id : eventKey(task);
}

/** The key a record consumed with `key` passes on to the records of the same delivery; `fallback` for one written without a key. */
export function keptKey(key: Buffer | null | undefined, fallback: () => string): string {
  return key ? key.toString() : fallback();
}
