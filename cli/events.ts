import { dataOf, tenantApi } from './api-client';
import { CliError } from './connect';

type Values = Record<string, string | string[] | boolean | undefined>;

export const EVENTS_USAGE = `  npm run cli -- events get <event id> [--tenant <id>] [--api-url <url>]
                 (the event as received, with its body; key in HOOKLINE_API_KEY, tenant from --tenant or HOOKLINE_TENANT)`;

/** `events get <id>`: GET /v1/tenants/{tenant}/events/{id} as the API answers it. */
export async function eventsCommand(args: string[], values: Values): Promise<unknown> {
  const [verb, id, ...extra] = args;
  if (verb !== 'get' || !id || extra.length > 0) throw new CliError(`usage:\n${EVENTS_USAGE}`);
  const { client, tenant_id } = tenantApi(values, 'events get');
  return dataOf(client.GET('/v1/tenants/{tenant_id}/events/{event_id}', { params: { path: { tenant_id, event_id: id } } }));
}
