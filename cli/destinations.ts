import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { DestinationCreate, DestinationPatch, Query, Schema } from '../clients/typescript/src';
import { apiConnection, clientOf, dataOf, queryOf, tenantApi } from './api-client';
import { CliError } from './connect';

export const DESTINATIONS_USAGE = `  npm run cli -- destinations types
  npm run cli -- destinations create --name <text> --url <url> [--type webhook|kafka|amqp|nats|mqtt] [--config '<JSON>']
                 [--auth '<JSON>'] [--transformation-file <file.js>] [--enabled true|false]
  npm run cli -- destinations update <id> [--name <text>] [--url <url>] [--rate-limit <n|none>] [--event-types <a,b|all>]
                 [--enabled true|false] [--ordered true|false] [--type <type>] [--config '<JSON>|none']
                 [--transformation-file <file.js>|none] [--patch '<JSON merge patch>'] [--if-match <etag>]
  npm run cli -- destinations test-transformation <id> (--payload <saved payload id> | --body '<JSON>')
                 [--transformation-file <file.js>]
  npm run cli -- destinations test-event <id> [--event-type <type>] [--payload <saved payload id> | --body '<JSON object>']
                 (one event to this destination only: the body, a saved payload, or the event type's example)
  npm run cli -- destinations pause <id> [--if-match <etag>]
  npm run cli -- destinations resume <id> [--if-match <etag>]
  npm run cli -- destinations rotate-secret <id> [--overlap <seconds>] [--if-match <etag>]
  npm run cli -- destinations changes <id> [--limit <n>] [--cursor <cursor>]
                 (destinations commands take --tenant <id> or HOOKLINE_TENANT, --api-url or HOOKLINE_API_URL, the key from HOOKLINE_API_KEY)`;

type Values = Record<string, string | boolean | undefined>;

/** A flag's JSON object (`--config`, `--auth`), or null for `none` when `nullable`. */
function jsonFlag(values: Values, flag: string, nullable: boolean): Record<string, unknown> | null | undefined {
  const v = values[flag];
  if (typeof v !== 'string') return undefined;
  if (nullable && v === 'none') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw new CliError(`--${flag} must be a JSON object${nullable ? ', or none' : ''}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new CliError(`--${flag} must be a JSON object${nullable ? ', or none' : ''}`);
  return parsed as Record<string, unknown>;
}

/** The JavaScript of `--transformation-file`, or null for `none`. */
function transformationFlag(values: Values, nullable: boolean): string | null | undefined {
  const file = values['transformation-file'];
  if (typeof file !== 'string') return undefined;
  if (nullable && file === 'none') return null;
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`--transformation-file: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** The merge patch of `destinations update`: `--patch` first, then each flag over it. */
export function patchOf(values: Values): DestinationPatch {
  let patch: DestinationPatch = {};
  if (typeof values.patch === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(values.patch);
    } catch {
      throw new CliError('--patch must be a JSON object (a merge patch)');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new CliError('--patch must be a JSON object (a merge patch)');
    // the API names each member it does not take (422)
    patch = parsed as DestinationPatch;
  }
  if (typeof values.name === 'string') patch.name = values.name;
  if (typeof values.url === 'string') patch.url = values.url;
  if (typeof values.type === 'string') patch.type = values.type as DestinationPatch['type'];
  const config = jsonFlag(values, 'config', true);
  if (config !== undefined) patch.config = config;
  const transformation = transformationFlag(values, true);
  if (transformation !== undefined) patch.transformation = transformation;
  if (typeof values['rate-limit'] === 'string') {
    const v = values['rate-limit'];
    if (v === 'none') patch.rate_limit_per_s = null;
    else if (/^\d{1,9}$/.test(v)) patch.rate_limit_per_s = Number(v);
    else throw new CliError('--rate-limit must be a whole number of deliveries per second, or none');
  }
  if (typeof values['event-types'] === 'string') {
    const v = values['event-types'];
    patch.event_types = v === 'all' ? null : v.split(',').map((t) => t.trim()).filter(Boolean);
  }
  for (const flag of ['enabled', 'ordered'] as const) {
    const v = values[flag];
    if (typeof v !== 'string') continue;
    if (v !== 'true' && v !== 'false') throw new CliError(`--${flag} must be true or false`);
    patch[flag] = v === 'true';
  }
  if (Object.keys(patch).length === 0) throw new CliError('destinations update needs something to change: --name, --url, --type, --config, --transformation-file, --rate-limit, --event-types, --enabled, --ordered or --patch');
  return patch;
}

/** `destinations <command> <id> ...`: one call of the API, its JSON answer on one line. */
export async function destinationsCommand(argv: string[]): Promise<unknown> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: 'string' },
      'api-url': { type: 'string' },
      name: { type: 'string' },
      url: { type: 'string' },
      type: { type: 'string' },
      config: { type: 'string' },
      auth: { type: 'string' },
      'transformation-file': { type: 'string' },
      payload: { type: 'string' },
      body: { type: 'string' },
      'rate-limit': { type: 'string' },
      'event-types': { type: 'string' },
      enabled: { type: 'string' },
      ordered: { type: 'string' },
      patch: { type: 'string' },
      'if-match': { type: 'string' },
      'event-type': { type: 'string' },
      overlap: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
  });
  const [command, id, ...extra] = positionals;
  const known = ['types', 'create', 'update', 'pause', 'resume', 'rotate-secret', 'changes', 'test-transformation', 'test-event'];
  if (!command || !known.includes(command)) throw new CliError(`unknown command "destinations${command ? ` ${command}` : ''}"\nusage:\n${DESTINATIONS_USAGE}`);
  if (command === 'types') {
    if (id !== undefined) throw new CliError('destinations types takes no argument');
    return dataOf(clientOf(apiConnection(values, 'destinations types')).GET('/v1/destination-types'));
  }
  if (command === 'create') {
    if (id !== undefined) throw new CliError('destinations create takes no positional argument: give --name and --url');
    const { client, tenant_id } = tenantApi(values, 'destinations create');
    return dataOf(client.POST('/v1/tenants/{tenant_id}/destinations', { params: { path: { tenant_id } }, body: createBodyOf(values) }));
  }
  if (!id || extra.length > 0) throw new CliError(`destinations ${command} takes one destination id`);
  const { client, tenant_id } = tenantApi(values, `destinations ${command}`);
  const path = { tenant_id, destination_id: id };
  const params = { path, header: { 'If-Match': typeof values['if-match'] === 'string' ? values['if-match'] : undefined } };
  const patch = (body: DestinationPatch) =>
    dataOf(client.PATCH('/v1/tenants/{tenant_id}/destinations/{destination_id}', { params, body, headers: { 'content-type': 'application/merge-patch+json' } }));
  switch (command) {
    case 'update':
      return patch(patchOf(values));
    case 'pause':
      return patch({ enabled: false });
    case 'resume':
      return patch({ enabled: true });
    case 'rotate-secret': {
      // `{}` takes the default overlap (the generated type makes a member with a default required)
      let body = {} as Schema<'SecretRotation'>;
      if (values.overlap !== undefined) {
        if (typeof values.overlap !== 'string' || !/^\d{1,7}$/.test(values.overlap)) throw new CliError('--overlap must be a whole number of seconds (0 to 604800)');
        body = { overlap_seconds: Number(values.overlap) };
      }
      return dataOf(client.POST('/v1/tenants/{tenant_id}/destinations/{destination_id}/rotate-secret', { params, body }));
    }
    case 'test-event':
      return dataOf(client.POST('/v1/tenants/{tenant_id}/destinations/{destination_id}/test-events', { params: { path }, body: testEventOf(values) }));
    case 'test-transformation':
      return dataOf(client.POST('/v1/tenants/{tenant_id}/destinations/{destination_id}/transformation/test', { params: { path }, body: testBodyOf(values) }));
    default:
      return dataOf(client.GET('/v1/tenants/{tenant_id}/destinations/{destination_id}/changes', { params: { path, query: queryOf<Query<'listDestinationChanges'>>(values, { limit: 'limit', cursor: 'cursor' }) } }));
  }
}

/** The body of `destinations test-event`: a saved payload or a JSON object, and an event type. */
function testEventOf(values: Values): Schema<'TestEventSend'> {
  const body: Schema<'TestEventSend'> = {};
  if (typeof values['event-type'] === 'string') body.event_type = values['event-type'];
  if (typeof values.payload === 'string') body.saved_payload_id = values.payload;
  const given = jsonFlag(values, 'body', false);
  if (given) body.payload = given;
  return body;
}

/** The body of `destinations create`. */
function createBodyOf(values: Values): DestinationCreate {
  if (typeof values.name !== 'string' || typeof values.url !== 'string') throw new CliError('destinations create needs --name <text> and --url <url>');
  const body: DestinationCreate = { name: values.name, url: values.url };
  if (typeof values.type === 'string') body.type = values.type as DestinationCreate['type'];
  const config = jsonFlag(values, 'config', false);
  if (config) body.config = config;
  const auth = jsonFlag(values, 'auth', false);
  if (auth) body.auth = auth as DestinationCreate['auth'];
  const transformation = transformationFlag(values, false);
  if (transformation) body.transformation = transformation;
  if (typeof values.enabled === 'string') {
    if (values.enabled !== 'true' && values.enabled !== 'false') throw new CliError('--enabled must be true or false');
    body.enabled = values.enabled === 'true';
  }
  return body;
}

/** The body of `destinations test-transformation`: a saved payload or a given body, and the code to try. */
function testBodyOf(values: Values): Schema<'TransformationTest'> {
  const hasPayload = typeof values.payload === 'string';
  if (hasPayload === (typeof values.body === 'string')) throw new CliError('destinations test-transformation needs one of --payload <saved payload id> and --body \'<JSON>\'');
  const body: Schema<'TransformationTest'> = {};
  if (hasPayload) body.payload_id = String(values.payload);
  else {
    try {
      body.body = JSON.parse(String(values.body));
    } catch {
      throw new CliError('--body must be JSON (a string body is a JSON string: \'"text"\')');
    }
  }
  const transformation = transformationFlag(values, false);
  if (transformation) body.transformation = transformation;
  return body;
}
