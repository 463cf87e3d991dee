import { apiConnection, clientOf, dataOf, tenantApi } from './api-client';
import { CliError } from './connect';

type Values = Record<string, string | string[] | boolean | undefined>;

/**
 * `stats [--window 1h]`: GET /v1/tenants/{tenant}/stats as the API answers it: attempts per
 * bucket by outcome, totals and error rate, the pipeline's lag per stage and the breakers.
 */
export async function tenantStats(values: Values): Promise<unknown> {
  const { client, tenant_id } = tenantApi(values, 'stats');
  const window = values.window;
  if (window !== undefined && typeof window !== 'string') throw new CliError('--window takes one value, like 15m or 6h');
  return dataOf(client.GET('/v1/tenants/{tenant_id}/stats', { params: { path: { tenant_id }, query: { window: window || undefined } } }));
}

/** `whoami`: GET /v1/me, the tenant, scopes and limits of the key in HOOKLINE_API_KEY. */
export async function whoami(values: Values): Promise<unknown> {
  return dataOf(clientOf(apiConnection(values, 'whoami')).GET('/v1/me'));
}
