import { parseArgs } from 'node:util';
import { errorMessage } from '../core/log';
import { CliError } from './connect';
import { keysCreate } from './keys';
import { dlqReplay } from './dlq';

const USAGE = `usage:
  npm run cli -- keys create --tenant <id> --scopes <comma,list|all> [--expires-at <ISO time>] [--resources <id,id>]
  npm run cli -- dlq replay --destination <destination id> [--no-progress]`;

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: 'string' },
      scopes: { type: 'string' },
      'expires-at': { type: 'string' },
      resources: { type: 'string' },
      destination: { type: 'string' },
      'no-progress': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const command = positionals.join(' ');
  switch (command) {
    case 'keys create': {
      const key = await keysCreate({ tenant: values.tenant, scopes: values.scopes, expiresAt: values['expires-at'], resources: values.resources });
      process.stdout.write(`${JSON.stringify({ tenant_id: key.tenant_id, key_id: key.key_id, api_key: key.api_key, scopes: key.scopes })}\n`);
      return;
    }
    case 'dlq replay': {
      const summary = await dlqReplay({ destination: values.destination, progress: !values['no-progress'] });
      process.stdout.write(`${JSON.stringify(summary)}\n`);
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
