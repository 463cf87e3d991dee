import { parseArgs } from 'node:util';
import { errorMessage } from '../core/log';
import { cliConfig, CliError } from './connect';
import { keysCreate, keysList, keysRevoke } from './keys';
import { secretsRotate } from './secrets';
import { dlqReplay } from './dlq';
import { DEFAULT_STATE_FILE, verifyDeliveryEvidence, type VerifyOptions } from './evidence';
import { readRunFile } from '../infra/local';
import { checkHealth } from './health';
import { destinationsCommand, DESTINATIONS_USAGE } from './destinations';
import { ingestersCommand, INGESTERS_USAGE } from './ingesters';
import { searchDeliveries } from './search';
import { replaysCommand, REPLAYS_USAGE } from './replays';
import { eventTypesCommand } from './event-types';
import { tenantStats, whoami } from './stats';
import { analyticsCommand, ANALYTICS_USAGE } from './analytics';
import { eventsCommand, EVENTS_USAGE } from './events';
import { deliveriesCommand, DELIVERIES_USAGE } from './deliveries';
import { deadLettersCommand, DEAD_LETTERS_USAGE } from './dead-letters';
import { exportCommand, EXPORT_USAGE } from './exports';
import { portalCommand, tenantsCommand, TENANTS_USAGE } from './tenants';

/** The options of `evidence verify`, from its arguments and the environment. */
function evidenceOptions(rest: string[], values: Record<string, string | string[] | boolean | undefined>): VerifyOptions {
  const [deliveryId, ...extra] = rest;
  if (!deliveryId || extra.length > 0) throw new CliError(`evidence verify takes one delivery id\n${USAGE}`);
  const tenant = values.tenant;
  if (typeof tenant !== 'string' || tenant === '') throw new CliError('evidence verify needs --tenant <id>');
  const apiKey = process.env.HOOKLINE_API_KEY;
  if (!apiKey) throw new CliError('evidence verify needs the API key in HOOKLINE_API_KEY (a key with read:evidence and read:deliveries)');
  let attempt: number | undefined;
  if (values.attempt !== undefined) {
    if (typeof values.attempt !== 'string' || !/^[1-9]\d{0,8}$/.test(values.attempt)) throw new CliError('--attempt must be a positive integer');
    attempt = Number(values.attempt);
  }
  let apiUrl = typeof values['api-url'] === 'string' ? values['api-url'] : process.env.HOOKLINE_API_URL;
  if (!apiUrl) apiUrl = readRunFile(cliConfig().config.dataDir)?.api_url ?? undefined;
  if (!apiUrl) throw new CliError('no API found: pass --api-url or set HOOKLINE_API_URL (or run it beside `npm start`)');
  return {
    deliveryId,
    tenant,
    apiKey,
    apiUrl,
    attempt,
    stateFile: typeof values.state === 'string' ? values.state : DEFAULT_STATE_FILE,
    verifierKey: typeof values['verifier-key'] === 'string' ? values['verifier-key'] : undefined,
  };
}

const USAGE = `usage:
  npm run cli -- keys create --tenant <id> --scopes <comma,list|all> [--name <text>] [--expires-at <ISO time>] [--resources <id,id>]
  npm run cli -- keys create --operator [--name <text>] [--expires-at <ISO time>]
                 (an operator key: it manages tenants and makes portal links, through the API)
  npm run cli -- keys list --tenant <id> | --operator
  npm run cli -- keys revoke --tenant <id> | --operator --id <key id>
${TENANTS_USAGE}
  npm run cli -- dlq replay --destination <destination id> [--no-progress]
${DEAD_LETTERS_USAGE}
${EXPORT_USAGE}
  npm run cli -- secrets rotate
  npm run cli -- evidence verify <delivery id> --tenant <id> [--attempt <n>] [--api-url <url>] [--state <file>] [--verifier-key <key>]
                 (the API key comes from HOOKLINE_API_KEY)
  npm run cli -- event-types list|get <id>|delete <id> [--tenant <id>] [--api-url <url>]
  npm run cli -- event-types create --name <name> [--description <text>] [--schema <file.json>] [--tenant <id>] [--api-url <url>]
                 (the API key comes from HOOKLINE_API_KEY; the tenant from --tenant or HOOKLINE_TENANT)
  npm run cli -- health [--url <process base URL> ...]
                 (each process's /readyz; exit 1 unless every one is ready; default: the API beside \`npm start\`)
  npm run cli -- search [--status s] [--destination id] [--event-type t] [--from t] [--to t] [--http-status 500|5xx] [--text q] [--limit n] [--cursor c]
                 (delivery attempts, newest first, as GET /v1/tenants/{tenant}/deliveries; --tenant or HOOKLINE_TENANT, key in HOOKLINE_API_KEY)
${DELIVERIES_USAGE}
  npm run cli -- stats [--window 15m|1h|24h] [--tenant <id>] [--api-url <url>]
                 (attempts per minute by outcome, error rate, the pipeline's lag per stage, breakers; key in HOOKLINE_API_KEY)
${ANALYTICS_USAGE}
  npm run cli -- whoami [--api-url <url>]
                 (the tenant, scopes and limits of the key in HOOKLINE_API_KEY)
${EVENTS_USAGE}
${DESTINATIONS_USAGE}
${INGESTERS_USAGE}
${REPLAYS_USAGE}`;

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'destinations' && !argv.includes('--help') && !argv.includes('-h')) return void process.stdout.write(`${JSON.stringify(await destinationsCommand(argv.slice(1)))}\n`);
  if (argv[0] === 'ingesters' && !argv.includes('--help') && !argv.includes('-h')) return void process.stdout.write(`${JSON.stringify(await ingestersCommand(argv.slice(1)))}\n`);
  if (argv[0] === 'tenants' && !argv.includes('--help') && !argv.includes('-h')) return void process.stdout.write(`${JSON.stringify(await tenantsCommand(argv.slice(1)))}\n`);
  if (argv[0] === 'export' && !argv.includes('--help') && !argv.includes('-h')) return void process.stdout.write(`${JSON.stringify(await exportCommand(argv.slice(1)))}\n`);
  if (argv[0] === 'portal' && !argv.includes('--help') && !argv.includes('-h')) return void process.stdout.write(`${JSON.stringify(await portalCommand(argv.slice(1)))}\n`);
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: 'string' },
      scopes: { type: 'string' },
      'expires-at': { type: 'string' },
      resources: { type: 'string' },
      name: { type: 'string' },
      id: { type: 'string' },
      destination: { type: 'string' },
      'no-progress': { type: 'boolean' },
      attempt: { type: 'string' },
      'api-url': { type: 'string' },
      state: { type: 'string' },
      'verifier-key': { type: 'string' },
      url: { type: 'string', multiple: true },
      from: { type: 'string' },
      to: { type: 'string' },
      status: { type: 'string' },
      'event-type': { type: 'string' },
      wait: { type: 'boolean' },
      description: { type: 'string' },
      schema: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      'http-status': { type: 'string' },
      text: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      window: { type: 'string' },
      stage: { type: 'string' },
      operator: { type: 'boolean' },
      last: { type: 'string' },
      bucket: { type: 'string' },
      'group-by': { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals[0] === 'evidence' && positionals[1] === 'verify') {
    const result = await verifyDeliveryEvidence(evidenceOptions(positionals.slice(2), values));
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  if (positionals[0] === 'replays') return replaysCommand(positionals.slice(1), values, (line) => process.stdout.write(`${line}\n`));
  if (positionals[0] === 'events') {
    process.stdout.write(`${JSON.stringify(await eventsCommand(positionals.slice(1), values))}\n`);
    return;
  }
  if (positionals[0] === 'dead-letters') {
    process.stdout.write(`${JSON.stringify(await deadLettersCommand(positionals.slice(1), values))}\n`);
    return;
  }
  if (positionals[0] === 'deliveries') {
    process.stdout.write(`${JSON.stringify(await deliveriesCommand(positionals.slice(1), values))}\n`);
    return;
  }
  if (positionals[0] === 'event-types') {
    process.stdout.write(`${JSON.stringify(await eventTypesCommand(positionals.slice(1), values))}\n`);
    return;
  }
  if (positionals.length === 1 && positionals[0] === 'health') {
    const urls = values.url ?? [];
    if (urls.length === 0) {
      const api = process.env.HOOKLINE_API_URL ?? readRunFile(cliConfig().config.dataDir)?.api_url;
      if (api) urls.push(api);
    }
    const results = await checkHealth(urls);
    for (const r of results) process.stdout.write(`${JSON.stringify(r)}\n`);
    if (!results.every((r) => r.ready)) {
      const bad = results.filter((r) => !r.ready).map((r) => `${r.url}: ${r.error ?? `not ready (${r.failing.join(', ')})`}`);
      throw new CliError(`not ready: ${bad.join('; ')}`);
    }
    return;
  }
  const command = positionals.join(' ');
  switch (command) {
    case 'keys create': {
      const key = await keysCreate({ operator: values.operator, tenant: values.tenant, scopes: values.scopes, expiresAt: values['expires-at'], resources: values.resources, name: values.name });
      process.stdout.write(`${JSON.stringify({ tenant_id: key.tenant_id, key_id: key.key_id, api_key: key.api_key, scopes: key.scopes })}\n`);
      return;
    }
    case 'keys list': {
      process.stdout.write(`${JSON.stringify(await keysList({ tenant: values.tenant, operator: values.operator }))}\n`);
      return;
    }
    case 'keys revoke': {
      process.stdout.write(`${JSON.stringify(await keysRevoke({ tenant: values.tenant, id: values.id, operator: values.operator }))}\n`);
      return;
    }
    case 'dlq replay': {
      const summary = await dlqReplay({ destination: values.destination, progress: !values['no-progress'] });
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      return;
    }
    case 'search': {
      process.stdout.write(`${JSON.stringify(await searchDeliveries(values))}\n`);
      return;
    }
    case 'stats': {
      process.stdout.write(`${JSON.stringify(await tenantStats(values))}\n`);
      return;
    }
    case 'analytics': {
      process.stdout.write(await analyticsCommand(values));
      return;
    }
    case 'whoami': {
      process.stdout.write(`${JSON.stringify(await whoami(values))}\n`);
      return;
    }
    case 'secrets rotate': {
      process.stdout.write(`${JSON.stringify(await secretsRotate())}\n`);
      return;
    }
    default:
      throw new CliError(command ? `unknown command "${command}"\n${USAGE}` : USAGE);
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: unknown) => {
    // one line, no stack: the CLI's errors are for people
    const message = err instanceof CliError || (err instanceof TypeError && 'code' in err) ? err.message : `error: ${errorMessage(err)}`;
    process.stderr.write(`${message.split('\n')[0]}\n`);
    if (err instanceof CliError && message.includes('\n')) process.stderr.write(`${message.split('\n').slice(1).join('\n')}\n`);
    process.exit(1);
  },
);
