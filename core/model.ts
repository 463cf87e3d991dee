import type { Scope } from './scopes';
import type { TenantLimits, TenantPortal, TenantState } from './tenants';

/**
 * The configuration entities. They live on the compacted config topic (one record per
 * entity, keyed by kind/tenant/id) and every process holds them in memory.
 */
export interface Tenant {
  kind: 'tenant';
  id: string;
  name: string;
  created_at: string;
  /** Absent on tenants made before tenants were a resource: as created. */
  updated_at?: string;
  /** The operator's own labels (plan, account id…), string to string. */
  metadata?: Record<string, string> | null;
  /** Absent: `active`. */
  state?: TenantState;
  suspended_at?: string | null;
  /** Limits replacing the deployment's settings for this tenant; null: the settings. */
  limits?: TenantLimits | null;
  /** The portal's branding and who may frame it; null: no branding, no framing. */
  portal?: TenantPortal | null;
}

export interface ApiKey {
  kind: 'api_key';
  id: string;
  tenant_id: string;
  /** SHA-256 of the secret part, hex. The secret itself is never stored. */
  secret_sha256: string;
  scopes: Scope[];
  /** When set, the key may act only on these resource ids. */
  resource_ids: string[] | null;
  created_at: string;
  expires_at: string | null;
  /** What the key is for; keys issued before keys had names have none. */
  name?: string | null;
  /** Set once the key is revoked; a revoked key is refused and stays listed. */
  revoked_at?: string | null;
}

/**
 * `active` delivers; `paused` (set by an operator, `enabled: false`) and `disabled` (set by the
 * service, e.g. after 410 Gone) hold new deliveries durably until the destination is enabled again.
 */
export type DestinationStatus = 'active' | 'paused' | 'disabled';

/** Credentials sent on every delivery to a destination; sealed at rest, masked when shown. */
export type DestinationAuth =
  | { type: 'basic'; username: string; password: string }
  | { type: 'bearer'; token: string }
  | { type: 'header'; name: string; value: string };

/** Where a destination's deliveries go: an HTTP endpoint, or a broker (core/destination-types.ts). */
export const DESTINATION_TYPES = ['webhook', 'kafka', 'amqp', 'nats', 'mqtt'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export interface Destination {
  kind: 'destination';
  id: string;
  tenant_id: string;
  name: string;
  /** Absent: `webhook` (destinations made before there were types). */
  type?: DestinationType;
  /** The receiver's address: the HTTP endpoint, or the broker's (its scheme per type). */
  url: string;
  /** The settings of a broker type (topic, exchange, subject…); null for a webhook. */
  config?: Record<string, unknown> | null;
  /** JavaScript defining `transform(event)`, run in a sandbox before each attempt; null: sent as received. */
  transformation?: string | null;
  status: DestinationStatus;
  /** Standard Webhooks signing secret, `whsec_` + base64; shown once on creation. */
  signing_secret: string;
  /** Credentials the receiver expects, sent on every delivery. */
  auth?: DestinationAuth | null;
  disabled_reason: string | null;
  /** Waits before each attempt; null uses the service's RETRY_SCHEDULE. */
  retry_schedule_ms?: number[] | null;
  /** Most delivery attempts per second to this destination, across all processes; null: no limit. */
  rate_limit_per_s?: number | null;
  /**
   * Deliveries one at a time in the order they were routed, keyed by this destination on
   * deliveries.* (one partition, one deliver process); absent or false: keyed by event, spread
   * over every partition. What the order covers, and what it costs: docs/ordering.md.
   */
  ordered?: boolean;
  /** Subscription: the event types this destination receives; null or absent: every type. */
  event_types?: string[] | null;
  /** Subscription: conditions on the payload an event must meet to be routed here (AND of rules). */
  filter?: unknown[] | null;
  /** The secret replaced by the last rotation, still signing beside the new one until it expires. */
  previous_signing_secret?: string | null;
  previous_secret_expires_at?: string | null;
  created_at: string;
  updated_at: string;
}

export const PROVIDERS = ['generic', 'stripe', 'github', 'shopify', 'slack', 'standard-webhooks', 'none'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface Ingester {
  kind: 'ingester';
  id: string;
  tenant_id: string;
  name: string;
  provider: Provider;
  /** Provider settings; secrets inside are masked whenever the API shows them. */
  config: Record<string, unknown>;
  filters: unknown[];
  /**
   * Its events keyed by this ingester on the webhook topics (one partition), so validate, filter
   * and route keep the order they were accepted in; absent or false: keyed by event. See docs/ordering.md.
   */
  ordered?: boolean;
  created_at: string;
  updated_at: string;
}

/** Connects one ingester to destinations: an event of the ingester fans out to each. */
export interface DeliveryFlow {
  kind: 'flow';
  id: string;
  tenant_id: string;
  name: string;
  ingester_id: string;
  destination_ids: string[];
  created_at: string;
  updated_at: string;
}

/** A named JSON payload a tenant keeps, e.g. to send test events. */
export interface SavedPayload {
  kind: 'saved_payload';
  id: string;
  tenant_id: string;
  name: string;
  payload: Record<string, unknown>;
  created_at: string;
}

/** An event type of a tenant's catalogue: what subscriptions name, with the schema of its payload. */
export interface EventType {
  kind: 'event_type';
  id: string;
  tenant_id: string;
  /** The type as events carry it, e.g. `invoice.paid`; unique in the tenant. */
  name: string;
  description: string | null;
  /** JSON Schema (2020-12) of the payload, or null. */
  schema: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
}

export type ReplayJobStatus = 'running' | 'completed' | 'cancelled' | 'failed';

/** A replay of every delivery matching a filter, run in the background. */
export interface ReplayJob {
  kind: 'replay_job';
  id: string;
  tenant_id: string;
  filter: {
    destination_id?: string | null;
    status?: string | null;
    event_type?: string | null;
    from: string;
    to: string;
  };
  status: ReplayJobStatus;
  /** Deliveries that match the filter, replayed so far, and how the replays ended. */
  matched: number;
  replayed: number;
  delivered: number;
  failed: number;
  error: string | null;
  /** Matches passed over: their event is not stored, or its body no longer matches its SHA-256. */
  skipped?: number;
  /**
   * Where the job resumes: matches are queued in (attempted_at, delivery_id) order, and every one
   * up to `after_ms`/`after_id` is queued; `done` once all are. Absent before the first batch.
   */
  resume?: { after_ms: number; after_id: string; done: boolean } | null;
  /** The API key that started the job. */
  created_by: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

/**
 * A tenant's data key: webhook bodies on Kafka are sealed with it (core/secrets/body-seal.ts), and
 * destroying it leaves every copy unreadable. Made on the tenant's first need; never shown by the API.
 */
export interface DataKey {
  kind: 'data_key';
  /** `dk_` + ULID: what a sealed record's `body_key` names. */
  id: string;
  tenant_id: string;
  /** 32 random bytes, base64; sealed with the keyring on the config topic like every secret. */
  material: string;
  created_at: string;
}

/**
 * What is left of an erased tenant: its id and when it was erased, no data. It keeps the id from
 * being created again and tells every stage to drop records of the tenant still in flight.
 */
export interface ErasedTenant {
  kind: 'erased_tenant';
  /** The erased tenant's id (the entity is keyed under it as its own tenant). */
  id: string;
  tenant_id: string;
  erased_at: string;
}

export type Entity = Tenant | ApiKey | Destination | Ingester | DeliveryFlow | SavedPayload | EventType | ReplayJob | DataKey | ErasedTenant;
export type EntityKind = Entity['kind'];

/**
 * Whether the entity is in a state no later record may change: a replay job that ended
 * (completed, cancelled or failed). The config store ignores such a record in every process.
 */
export function isFinal(entity: Entity): boolean {
  return entity.kind === 'replay_job' && entity.status !== 'running';
}

/** Key of an entity on the config topic. Tenants have no tenant above them. */
export function entityKey(kind: EntityKind, tenantId: string, id: string): string {
  return `${kind}/${tenantId}/${id}`;
}
