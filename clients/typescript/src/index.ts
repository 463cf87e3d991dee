import createClient, { type Client } from 'openapi-fetch';
import type { components, operations, paths } from './schema';

export type { components, operations, paths } from './schema';
export { isProblem, ProblemError, unwrap, type ApiResult, type FieldError, type Problem } from './problem';

/** The API's schemas by name, for those without an alias below: `Schema<'StageLag'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

export type Destination = Schema<'Destination'>;
export type DestinationCreate = Schema<'DestinationCreate'>;
/** A created destination: the destination and its signing secret, shown this once. */
export type DestinationCreated = Schema<'DestinationCreated'>;
export type DestinationPatch = Schema<'DestinationPatch'>;
export type DestinationList = Schema<'DestinationList'>;
export type Ingester = Schema<'Ingester'>;
export type IngesterUpdate = Schema<'IngesterUpdate'>;
export type DeliveryFlow = Schema<'DeliveryFlow'>;
export type Delivery = Schema<'Delivery'>;
export type DeliveryList = Schema<'DeliveryList'>;
export type DeliveryEvidence = Schema<'DeliveryEvidence'>;
export type ReceivedEvent = Schema<'ReceivedEvent'>;
export type EventType = Schema<'EventType'>;
export type EventTypeCreate = Schema<'EventTypeCreate'>;
export type ReplayCreate = Schema<'ReplayCreate'>;
export type ReplayJob = Schema<'ReplayJob'>;
export type DeadLetter = Schema<'DeadLetter'>;
export type TenantStats = Schema<'TenantStats'>;
export type KeyIdentity = Schema<'KeyIdentity'>;

/** The query parameters of an operation, by operationId: `Query<'listDeliveries'>`. */
export type Query<Operation extends keyof operations> = NonNullable<operations[Operation]['parameters']['query']>;

/** A client of the whole API: `client.GET('/v1/tenants/{tenant_id}/destinations', { params: { path: { tenant_id } } })`. */
export type HooklineClient = Client<paths>;

export interface HooklineClientOptions {
  /** Where the API is, like `https://hookline.example.com` (the paths begin with `/v1`). */
  baseUrl: string;
  /** A tenant API key (`hlk_...`), sent as `Authorization: Bearer <key>`; none for the open paths (health, the OpenAPI document). */
  apiKey?: string;
  /** The fetch that sends each request; the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

/** A typed client of the API: each path, its parameters, body and answers as the OpenAPI document gives them. */
export function createHooklineClient(options: HooklineClientOptions): HooklineClient {
  const client = createClient<paths>({ baseUrl: options.baseUrl, fetch: options.fetch, headers: options.headers });
  const { apiKey } = options;
  if (apiKey) {
    client.use({
      onRequest({ request }) {
        request.headers.set('Authorization', `Bearer ${apiKey}`);
        return request;
      },
    });
  }
  return client;
}
