import { parseArgs } from 'node:util';
import type { Ingester, IngesterUpdate } from '../clients/typescript/src';
import { dataOf, tenantApi } from './api-client';
import { CliError } from './connect';

export const INGESTERS_USAGE = `  npm run cli -- ingesters get <id>
  npm run cli -- ingesters update <id> [--name <text>] [--ordered true|false]
                 (ingesters commands take --tenant <id> or HOOKLINE_TENANT, --api-url or HOOKLINE_API_URL, the key from HOOKLINE_API_KEY)`;

/**
 * `ingesters <command> <id> ...`: one JSON line, the ingester as the API shows it. An update reads
 * the ingester and sends its `PUT` with the name (required there) and the members given; the
 * rest (provider, config, filters, flows) is kept by the API.
 */
export async function ingestersCommand(argv: string[]): Promise<Ingester> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { tenant: { type: 'string' }, 'api-url': { type: 'string' }, name: { type: 'string' }, ordered: { type: 'string' } },
  });
  const [command, id, ...extra] = positionals;
  if (command !== 'get' && command !== 'update') throw new CliError(`unknown command "ingesters${command ? ` ${command}` : ''}"\nusage:\n${INGESTERS_USAGE}`);
  if (!id || extra.length > 0) throw new CliError(`ingesters ${command} takes one ingester id`);
  const change: Partial<IngesterUpdate> = {};
  if (command === 'update') {
    if (typeof values.name === 'string') change.name = values.name;
    if (typeof values.ordered === 'string') {
      if (values.ordered !== 'true' && values.ordered !== 'false') throw new CliError('--ordered must be true or false');
      change.ordered = values.ordered === 'true';
    }
    if (Object.keys(change).length === 0) throw new CliError('ingesters update needs something to change: --name or --ordered');
  }
  const { client, tenant_id } = tenantApi(values, `ingesters ${command}`);
  const params = { path: { tenant_id, ingester_id: id } };
  const current = await dataOf(client.GET('/v1/tenants/{tenant_id}/ingesters/{ingester_id}', { params }));
  if (command === 'get') return current;
  return dataOf(client.PUT('/v1/tenants/{tenant_id}/ingesters/{ingester_id}', { params, body: { name: current.name, ...change } }));
}
