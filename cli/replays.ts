import type { ReplayCreate, ReplayJob } from '../clients/typescript/src';
import { dataOf, tenantApi } from './api-client';
import { CliError } from './connect';

type Values = Record<string, string | string[] | boolean | undefined>;

export const REPLAYS_USAGE = `  npm run cli -- replays start --tenant <id> --from <RFC 3339 time> --to <RFC 3339 time> [--destination <id>] [--status delivered|failed] [--event-type <type>] [--wait]
  npm run cli -- replays status <replay id> --tenant <id>
  npm run cli -- replays list --tenant <id>
  npm run cli -- replays cancel <replay id> --tenant <id>
                 (through the API: HOOKLINE_API_KEY, --api-url or HOOKLINE_API_URL)`;

const str = (v: Values[string]): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** How often `--wait` asks how the job is doing. */
const WAIT_POLL_MS = 1_000;

/**
 * `replays start|status|list|cancel`: replay jobs through the API. Prints the job (or the list)
 * as one JSON line; `start --wait` prints the job again once it has finished.
 */
export async function replaysCommand(args: string[], values: Values, out: (line: string) => void): Promise<void> {
  const [sub, ...rest] = args;
  const what = `replays ${sub ?? ''}`.trim();
  const one = (): string => {
    if (rest.length !== 1 || !rest[0]) throw new CliError(`${what} takes one replay id (rpl_...)\n${REPLAYS_USAGE}`);
    return rest[0];
  };
  switch (sub) {
    case 'start': {
      if (rest.length > 0) throw new CliError(`replays start takes no positional argument\n${REPLAYS_USAGE}`);
      const from = str(values.from);
      const to = str(values.to);
      if (!from || !to) throw new CliError('replays start needs --from <time> and --to <time> (RFC 3339, e.g. 2026-11-26T00:00:00Z)');
      const { client, tenant_id } = tenantApi(values, what);
      const body: ReplayCreate = { from, to };
      const destination = str(values.destination);
      const status = str(values.status);
      const eventType = str(values['event-type']);
      if (destination) body.destination_id = destination;
      // the API names the statuses it takes when given another
      if (status) body.status = status as ReplayCreate['status'];
      if (eventType) body.event_type = eventType;
      let job: ReplayJob = await dataOf(client.POST('/v1/tenants/{tenant_id}/replays', { params: { path: { tenant_id } }, body }));
      out(JSON.stringify(job));
      if (values.wait === true) {
        while (job.status === 'running') {
          await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
          job = await dataOf(client.GET('/v1/tenants/{tenant_id}/replays/{replay_id}', { params: { path: { tenant_id, replay_id: job.id } } }));
        }
        out(JSON.stringify(job));
        if (job.status === 'failed') throw new CliError(`replay job ${job.id} failed: ${String(job.error)}`);
      }
      return;
    }
    case 'status':
    case 'cancel': {
      const { client, tenant_id } = tenantApi(values, what);
      const params = { path: { tenant_id, replay_id: one() } };
      const path = '/v1/tenants/{tenant_id}/replays/{replay_id}';
      out(JSON.stringify(await dataOf(sub === 'status' ? client.GET(path, { params }) : client.DELETE(path, { params }))));
      return;
    }
    case 'list': {
      if (rest.length > 0) throw new CliError(`replays list takes no positional argument\n${REPLAYS_USAGE}`);
      const { client, tenant_id } = tenantApi(values, what);
      const replays: ReplayJob[] = [];
      let cursor: string | undefined;
      do {
        const page = await dataOf(client.GET('/v1/tenants/{tenant_id}/replays', { params: { path: { tenant_id }, query: { limit: 200, cursor } } }));
        replays.push(...page.replays);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      out(JSON.stringify({ replays }));
      return;
    }
    default:
      throw new CliError(`unknown command "replays${sub ? ` ${sub}` : ''}"\n${REPLAYS_USAGE}`);
  }
}
