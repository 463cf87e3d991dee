import type { Query } from '../clients/typescript/src';
import { dataOf, queryOf, tenantApi } from './api-client';

type Values = Record<string, string | string[] | boolean | undefined>;

/** The options of `search` and the query parameter each one sets. */
export const SEARCH_OPTIONS = {
  status: 'status',
  destination: 'destination_id',
  'event-type': 'event_type',
  from: 'from',
  to: 'to',
  'http-status': 'response_code',
  text: 'q',
  limit: 'limit',
  cursor: 'cursor',
} as const satisfies Record<string, keyof Query<'listDeliveries'>>;

/**
 * `search`: one page of GET /v1/tenants/{tenant}/deliveries with the given filters, the API's
 * answer as it is (its `next_cursor` goes back as --cursor with the same filters). The API
 * checks the values; its refusal comes back as one line.
 */
export async function searchDeliveries(values: Values): Promise<unknown> {
  const { client, tenant_id } = tenantApi(values, 'search');
  return dataOf(client.GET('/v1/tenants/{tenant_id}/deliveries', { params: { path: { tenant_id }, query: queryOf<Query<'listDeliveries'>>(values, SEARCH_OPTIONS) } }));
}
