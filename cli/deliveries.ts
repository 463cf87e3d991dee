import { dataOf, tenantApi } from './api-client';
import { CliError } from './connect';

type Values = Record<string, string | string[] | boolean | undefined>;

export const DELIVERIES_USAGE = `  npm run cli -- deliveries get <delivery id> [--tenant <id>] [--api-url <url>]
                 (the delivery and every attempt, oldest first, each with its trace_id; key in HOOKLINE_API_KEY, tenant from --tenant or HOOKLINE_TENANT)`;

/** `deliveries get <id>`: GET /v1/tenants/{tenant}/deliveries/{id} as the API answers it. */
export async function deliveriesCommand(args: string[], values: Values): Promise<unknown> {
  const [verb, id, ...extra] = args;
  if (verb !== 'get' || !id || extra.length > 0) throw new CliError(`usage:\n${DELIVERIES_USAGE}`);
  const { client, tenant_id } = tenantApi(values, 'deliveries get');
  return dataOf(client.GET('/v1/tenants/{tenant_id}/deliveries/{delivery_id}', { params: { path: { tenant_id, delivery_id: id } } }));
}
