import { parseArgs } from 'node:util';
import type { Schema } from '../clients/typescript/src';
import { TENANT_ID_PATTERN } from '../core/ids';
import { parseRateLimit } from '../core/rate-limits';
import { parseRetention } from '../core/config';
import { apiConnection, clientOf, dataOf } from './api-client';
import { CliError } from './connect';

type TenantCreate = Schema<'TenantCreate'>;
type TenantUpdate = Schema<'TenantUpdate'>;

export const TENANTS_USAGE = `  npm run cli -- tenants list [--limit <n>] [--cursor <c>]
  npm run cli -- tenants get <id>
  npm run cli -- tenants create <id> --name <text> [--metadata k=v,k=v] [--logo-url <https URL>] [--accent-color #rrggbb]
                 [--frame-ancestors <origin,origin>] [--ingest-per-hook N/window|default] [--ingest-per-tenant N/window|default]
                 [--max-payload-bytes <n>|default] [--quota <kind>=<n>|default,...]
                 [--retention bodies=<30d|12h|90s>|default,attempts=…,logs=…]
  npm run cli -- tenants update <id> [the flags of create]
  npm run cli -- tenants suspend <id>
  npm run cli -- tenants resume <id>
  npm run cli -- tenants delete <id> --yes   (erases the tenant and its data for good)
                 (tenants commands need an operator key in HOOKLINE_API_KEY: keys create --operator)
  npm run cli -- portal link --tenant <id> [--scopes <a,b>] [--destinations <dst,dst>] [--link-seconds <n>] [--session-seconds <n>]
  npm run cli -- portal sessions --tenant <id>
  npm run cli -- portal revoke <session id> --tenant <id>
                 (an operator key, or the tenant's key with write:portal-sessions, in HOOKLINE_API_KEY)`;

const FLAGS = {
  name: { type: 'string' },
  metadata: { type: 'string' },
  'logo-url': { type: 'string' },
  'accent-color': { type: 'string' },
  'frame-ancestors': { type: 'string' },
  'ingest-per-hook': { type: 'string' },
  'ingest-per-tenant': { type: 'string' },
  'max-payload-bytes': { type: 'string' },
  quota: { type: 'string' },
  retention: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  tenant: { type: 'string' },
  scopes: { type: 'string' },
  destinations: { type: 'string' },
  'link-seconds': { type: 'string' },
  'session-seconds': { type: 'string' },
  'api-url': { type: 'string' },
  yes: { type: 'boolean' },
} as const;

type Values = Record<string, string | boolean | undefined>;

const list = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
const isDefault = (v: string) => v === 'default' || v === 'none';

/** `N/window` as the API's `{ limit, window_seconds }`, or null (`default`: the deployment's setting). */
function rateFlag(flag: string, v: string): { limit: number; window_seconds: number } | null {
  if (isDefault(v)) return null;
  const parsed = parseRateLimit(v);
  if (parsed.error || !parsed.limit) throw new CliError(`--${flag}: ${parsed.error ?? 'expected N/window, e.g. 500/1s, or default'}`);
  return { limit: parsed.limit.limit, window_seconds: parsed.limit.windowSeconds };
}

function integerFlag(flag: string, v: string): number {
  if (!/^\d{1,12}$/.test(v)) throw new CliError(`--${flag} must be a whole number`);
  return Number(v);
}

/** `bodies=7d,attempts=90d,logs=default` as the API's `{ bodies_seconds, … }` (`default`: the deployment's setting). */
function retentionFlag(v: string): Record<string, number | null> {
  const retention: Record<string, number | null> = {};
  for (const pair of list(v)) {
    const [kind, period] = pair.split('=');
    if (!kind || period === undefined || !['bodies', 'attempts', 'logs'].includes(kind)) throw new CliError(`--retention: "${pair}" is not <kind>=<period> (kinds: bodies, attempts, logs)`);
    if (isDefault(period)) {
      retention[`${kind}_seconds`] = null;
      continue;
    }
    const parsed = parseRetention(period);
    // a tenant's period is bounded; `forever` is the deployment's to set
    if (parsed.error !== undefined || parsed.seconds === null) throw new CliError(`--retention: ${kind}: ${parsed.error ?? 'a tenant\'s period is at most 3650d; forever is set for the deployment (RETENTION_*)'}`);
    retention[`${kind}_seconds`] = parsed.seconds;
  }
  return retention;
}

/** The members the flags set: what create and update share. */
function membersOf(values: Values): Omit<TenantUpdate, 'id'> {
  const body: Omit<TenantUpdate, 'id'> = {};
  if (typeof values.name === 'string') body.name = values.name;
  if (typeof values.metadata === 'string') {
    body.metadata = isDefault(values.metadata)
      ? null
      : Object.fromEntries(
          list(values.metadata).map((pair) => {
            const eq = pair.indexOf('=');
            if (eq <= 0) throw new CliError(`--metadata: "${pair}" is not key=value`);
            return [pair.slice(0, eq), pair.slice(eq + 1)];
          }),
        );
  }
  const portal: NonNullable<TenantUpdate['portal']> = {};
  if (typeof values['logo-url'] === 'string') portal.logo_url = isDefault(values['logo-url']) ? null : values['logo-url'];
  if (typeof values['accent-color'] === 'string') portal.accent_color = isDefault(values['accent-color']) ? null : values['accent-color'];
  if (typeof values['frame-ancestors'] === 'string') portal.frame_ancestors = isDefault(values['frame-ancestors']) ? [] : list(values['frame-ancestors']);
  if (Object.keys(portal).length > 0) body.portal = portal;
  const limits: NonNullable<TenantUpdate['limits']> = {};
  if (typeof values['ingest-per-hook'] === 'string') limits.ingest_per_hook = rateFlag('ingest-per-hook', values['ingest-per-hook']);
  if (typeof values['ingest-per-tenant'] === 'string') limits.ingest_per_tenant = rateFlag('ingest-per-tenant', values['ingest-per-tenant']);
  if (typeof values['max-payload-bytes'] === 'string') limits.max_payload_bytes = isDefault(values['max-payload-bytes']) ? null : integerFlag('max-payload-bytes', values['max-payload-bytes']);
  if (typeof values.quota === 'string') {
    const quotas: Record<string, number | null> = {};
    for (const pair of list(values.quota)) {
      const [kind, n] = pair.split('=');
      if (!kind || n === undefined) throw new CliError(`--quota: "${pair}" is not <kind>=<n> (kinds: ingesters, destinations, delivery_flows, saved_payloads, api_keys, event_types)`);
      quotas[kind] = isDefault(n) ? null : integerFlag('quota', n);
    }
    limits.quotas = quotas as NonNullable<typeof limits.quotas>;
  }
  if (typeof values.retention === 'string') (limits as Record<string, unknown>).retention = retentionFlag(values.retention);
  if (Object.keys(limits).length > 0) body.limits = limits;
  return body;
}

function tenantIdOf(command: string, id: string | undefined): string {
  if (!id) throw new CliError(`tenants ${command} needs a tenant id`);
  if (!TENANT_ID_PATTERN.test(id)) throw new CliError(`"${id}" is not a tenant id (lower-case letters, digits, "-" and "_", at most 63)`);
  return id;
}

function parse(argv: string[]): { positionals: string[]; values: Values } {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: FLAGS });
  } catch (err) {
    throw new CliError(`${(err as Error).message}\n${TENANTS_USAGE}`);
  }
}

/** `tenants ...`: the operators' commands, through the API with the operator key in HOOKLINE_API_KEY. */
export async function tenantsCommand(argv: string[]): Promise<unknown> {
  const { positionals, values } = parse(argv);
  const [sub, id, ...extra] = positionals;
  if (extra.length > 0) throw new CliError(`tenants ${sub} takes one tenant id\n${TENANTS_USAGE}`);
  const client = clientOf(apiConnection(values, `tenants ${sub ?? ''}`.trim()));
  const path = { tenant_id: '' };
  switch (sub) {
    case 'list':
      // the text goes as typed: the API judges it and refuses a wrong one in its own words
      return dataOf(client.GET('/v1/tenants', { params: { query: { limit: values.limit as unknown as number | undefined, cursor: values.cursor as string | undefined } } }));
    case 'get':
      path.tenant_id = tenantIdOf(sub, id);
      return dataOf(client.GET('/v1/tenants/{tenant_id}', { params: { path } }));
    case 'create': {
      if (typeof values.name !== 'string') throw new CliError('tenants create needs --name <text>');
      const body: TenantCreate = { id: tenantIdOf(sub, id), name: values.name, ...membersOf(values) };
      return dataOf(client.POST('/v1/tenants', { body }));
    }
    case 'update': {
      path.tenant_id = tenantIdOf(sub, id);
      const body = membersOf(values);
      if (Object.keys(body).length === 0) throw new CliError('tenants update changes nothing: give at least one flag');
      return dataOf(client.PATCH('/v1/tenants/{tenant_id}', { params: { path }, body }));
    }
    case 'suspend':
    case 'resume':
      path.tenant_id = tenantIdOf(sub, id);
      return dataOf(client.PATCH('/v1/tenants/{tenant_id}', { params: { path }, body: { state: sub === 'suspend' ? 'suspended' : 'active' } }));
    case 'delete':
      path.tenant_id = tenantIdOf(sub, id);
      if (values.yes !== true) throw new CliError(`tenants delete erases ${id} for good (its configuration, secrets, Redis keys and ClickHouse rows); run it again with --yes`);
      await dataOf(client.DELETE('/v1/tenants/{tenant_id}', { params: { path } }));
      return {
        erased: true,
        id,
        removed: ['config entities (data keys, API keys, destinations, ingesters, flows, saved payloads, event types, replay jobs)', 'Redis keys', 'ClickHouse rows (every table but the evidence log)'],
        kept: ['evidence log hashes (proofs still verify)', 'a marker of the erasure: the id cannot be created again'],
      };
    default:
      throw new CliError(sub ? `unknown command "tenants ${sub}"\n${TENANTS_USAGE}` : TENANTS_USAGE);
  }
}

/** `portal ...`: one-time links to the portal, the live sessions, revoking one. */
export async function portalCommand(argv: string[]): Promise<unknown> {
  const { positionals, values } = parse(argv);
  const [sub, id, ...extra] = positionals;
  if (extra.length > 0 || (sub !== 'revoke' && id !== undefined)) throw new CliError(`unexpected argument "${[id, ...extra].join(' ')}"\n${TENANTS_USAGE}`);
  const tenant = typeof values.tenant === 'string' && values.tenant !== '' ? values.tenant : process.env.HOOKLINE_TENANT;
  if (!tenant) throw new CliError(`portal ${sub ?? ''} needs --tenant <id> (or HOOKLINE_TENANT)`.replace('  ', ' '));
  const client = clientOf(apiConnection(values, `portal ${sub ?? ''}`.trim()));
  switch (sub) {
    case 'link': {
      // every member is optional; the API gives the defaults
      const body: Partial<Schema<'PortalSessionCreate'>> = {};
      if (typeof values.scopes === 'string') body.scopes = list(values.scopes) as NonNullable<typeof body.scopes>;
      if (typeof values.destinations === 'string') body.destination_ids = list(values.destinations);
      if (typeof values['link-seconds'] === 'string') body.link_seconds = integerFlag('link-seconds', values['link-seconds']);
      if (typeof values['session-seconds'] === 'string') body.session_seconds = integerFlag('session-seconds', values['session-seconds']);
      return dataOf(client.POST('/v1/tenants/{tenant_id}/portal-sessions', { params: { path: { tenant_id: tenant } }, body: body as Schema<'PortalSessionCreate'> }));
    }
    case 'sessions':
      return dataOf(client.GET('/v1/tenants/{tenant_id}/portal-sessions', { params: { path: { tenant_id: tenant } } }));
    case 'revoke': {
      if (!id) throw new CliError('portal revoke needs a session id (pss_...)');
      await dataOf(client.DELETE('/v1/tenants/{tenant_id}/portal-sessions/{portal_session_id}', { params: { path: { tenant_id: tenant, portal_session_id: id } } }));
      return { revoked: true, id };
    }
    default:
      throw new CliError(sub ? `unknown command "portal ${sub}"\n${TENANTS_USAGE}` : TENANTS_USAGE);
  }
}
