import { parseArgs } from 'node:util';
import { startClickHouseHttpServer } from './http-server';

/**
 * Entry point of the ClickHouse server process (see local-clickhouse.ts):
 *   server-main.ts --data-dir DIR [--port N] [--host H]
 * The user and password come from CLICKHOUSE_SERVER_USER / CLICKHOUSE_SERVER_PASSWORD, never
 * from the command line, which any local user can read.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'data-dir': { type: 'string' }, port: { type: 'string' }, host: { type: 'string' } } });
  const dataDir = values['data-dir'];
  if (!dataDir) throw new Error('--data-dir is required');
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port: ${values.port}`);
  const server = await startClickHouseHttpServer({
    dataDir,
    port,
    host: values.host ?? '127.0.0.1',
    user: process.env.CLICKHOUSE_SERVER_USER || 'default',
    password: process.env.CLICKHOUSE_SERVER_PASSWORD ?? '',
  });
  delete process.env.CLICKHOUSE_SERVER_PASSWORD;
  process.stdout.write(`ClickHouse HTTP interface on ${server.url}, data in ${dataDir}\n`);
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`${signal}: stopping\n`);
    // queued queries finish and the engine closes its data directory before the exit
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`stopping failed: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`ClickHouse HTTP interface failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
