/**
 * What the service does not guarantee, by category. list_non_claims answers these and
 * docs/non-claims.md says the same (a test keeps them in step).
 */
export interface NonClaim {
  id: string;
  category: 'delivery' | 'ordering' | 'evidence' | 'availability' | 'security' | 'operations' | 'filtering';
  statement: string;
}

export const NON_CLAIMS: readonly NonClaim[] = [
  { id: 'NC-01', category: 'delivery', statement: 'Delivery is at-least-once, not exactly-once: a receiver can see one delivery twice and should deduplicate on `webhook-id`, which stays the same for every attempt of one delivery.' },
  { id: 'NC-02', category: 'ordering', statement: 'No ordering unless asked for: webhooks and deliveries are keyed by event and spread over every partition, so a destination receives them in no particular order. An `ordered` ingester keeps the order its webhooks were accepted in up to routing, and an `ordered` destination receives its deliveries one at a time in the order routed; even then a delivery whose retries outlast DELIVERY_ORDERED_WAIT_MS leaves that order, and so do replays, retries through the API and deliveries sent again after a crash or a rebalance (docs/ordering.md).' },
  { id: 'NC-03', category: 'evidence', statement: 'The evidence log proves what the service recorded about each attempt, not what a receiver did with it.' },
  { id: 'NC-04', category: 'evidence', statement: 'Checkpoints are signed by the service\'s own key and not cosigned by outside witnesses: a client that keeps the checkpoints it saw detects a rewritten log, one that keeps none does not.' },
  { id: 'NC-05', category: 'evidence', statement: 'One sequencer writes the evidence log at a time, fenced by a Kafka transactional id: a deposed sequencer cannot append, but the log stalls while the group notices a stopped owner (its session timeout) and until the successor has read the tail; it does not survive losing a majority of the Kafka cluster.' },
  { id: 'NC-06', category: 'availability', statement: 'The embedded ClickHouse engine allows one process per data dir, and the local ClickHouse server (infra/clickhouse, the same engine behind the HTTP interface) and the local schema registry are single processes: none is highly available. A replicated ClickHouse and a registry of several nodes are the operator\'s to run.' },
  { id: 'NC-07', category: 'delivery', statement: 'Deliver processes share breakers and the per-destination limit through Redis by polling, not in lock step: another process follows an open breaker up to DELIVERY_SYNC_MS late, each may make its own trial when the owner makes none, and the limit is overshot for a while as processes join.' },
  { id: 'NC-08', category: 'operations', statement: 'Runtime and trust proofs are point-in-time checks made when asked, not continuous monitoring; a proof that passes now says nothing about the time between two checks.' },
  { id: 'NC-09', category: 'security', statement: 'Rate limits fail open when Redis is unreachable, rather than refusing every client; TRUST-009 shows it.' },
  { id: 'NC-10', category: 'security', statement: 'Destination URLs may be http: unless DESTINATION_HTTPS_ONLY is on; TRUST-007 shows it.' },
  { id: 'NC-11', category: 'filtering', statement: 'Filters see the raw body as JSON only; form-encoded and XML bodies pass only event-type and header rules.' },
  { id: 'NC-12', category: 'delivery', statement: 'A delivery is final after its retry schedule; dead deliveries wait in the dead-letter queue until retried through the API or the CLI, never automatically.' },
  { id: 'NC-13', category: 'security', statement: 'Tenants share processes, topics and ClickHouse tables: isolation is the service\'s checks on every read and write, not separate storage or per-tenant keys.' },
  { id: 'NC-14', category: 'security', statement: 'The key-encryption key lives in each process\'s environment and memory, and secrets are opened in memory: whoever can read a running process (or its core dump) can read the secrets. There is no KMS or HSM integration.' },
  { id: 'NC-15', category: 'security', statement: 'Webhook payloads, headers other than credentials, and delivery logs are stored in clear on Kafka and in ClickHouse: protect DATA_DIR (or the cluster\'s disks) with disk encryption where payloads are sensitive.' },
  { id: 'NC-16', category: 'delivery', statement: 'Held deliveries are released at least once, not exactly once: after a crash or a rebalance of the release group, deliveries of active destinations that sit after the earliest still-held one on their partition of deliveries.held go back a second time (same webhook-id). A destination\'s rate limit is kept by send slots in Redis: while Redis does not answer, its deliveries wait rather than go unmetered, and a delivery that reaches its attempt more than a second after its slot takes a new one.' },
  { id: 'NC-17', category: 'operations', statement: 'Operational webhooks are best effort and bounded: a process that stops between reserving a happening\'s slot in Redis and Kafka acknowledging its event loses that event, and within OPERATIONAL_EVENT_WINDOW_MS a destination\'s repeated happenings of one type make one event (the rest are counted in its `suppressed`), at most OPERATIONAL_EVENTS_PER_TENANT per tenant.' },
  { id: 'NC-18', category: 'operations', statement: 'Metrics are each process\'s own since it started (counters restart at zero; consumer lag is read from Kafka when /metrics is scraped, at most every 2 s), and spans are recorded only where an OTLP endpoint is set: without one only the trace id travels, and a span a process queued is lost if it is killed before its batch is sent.' },
];
