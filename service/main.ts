// first: on an unsupported Node, one line and nothing else loaded
import './supported-node';
import { ConfigError, loadConfig, stagesFromArgs, STAGE_NAMES, type Config } from '../core/config';
import { Logger, errorMessage, logOutput, writeStdoutLine } from '../core/log';
import { MissingPrerequisite } from '../infra/prerequisites';
import { startService, type RunningService } from './service';

/** The notice of a development start: every relaxed default, on stderr, before anything else. */
function developmentNotice(config: Config): string {
  if (config.relaxedDefaults.length === 0) return '';
  return [
    'hookline: DEVELOPMENT MODE (HOOKLINE_ENV=development). Defaults relaxed for local use, not for production:',
    ...config.relaxedDefaults.map((line) => `  - ${line}`),
    'Set HOOKLINE_ENV=production, or the variables above, for the strict defaults.',
    '',
  ].join('\n');
}

/** What a person at the terminal needs once it is up (pretty logs only: JSON stdout stays JSON). */
function readyNotice(service: RunningService, config: Config): string {
  const base = service.url ?? config.publicBaseUrl;
  const all = config.stages.length === STAGE_NAMES.length;
  return [
    '',
    `hookline is up (${all ? 'all stages' : config.stages.join(', ')}); Ctrl-C stops it and what it started.`,
    ...(config.stages.includes('api') ? [`  API         ${base}/v1   (OpenAPI document: ${base}/v1/openapi.json)`, `  Dashboard   ${base}/ui   (sign in with an API key)`] : []),
    ...(config.stages.includes('ingest') ? [`  Hook URLs   ${base}/v1/hooks/<ingester id>`] : []),
    `  Health      ${base}/healthz, ${base}/readyz`,
    `  Data        ${config.dataDir}`,
    '',
  ].join('\n');
}

/** The demo tenant's key, shown once: the one line a first start must not bury. */
function demoKeyNotice(demoKey: string, base: string): string {
  return (
    `\nDemo tenant "demo" created. Its API key (shown once, keep it):\n\n  ${demoKey}\n\n` +
    `Try: curl -H "Authorization: Bearer ${demoKey}" ${base}/v1/tenants/demo/destinations\n\n`
  );
}

async function main(): Promise<void> {
  let config: Config;
  try {
    const argv = process.argv.slice(2);
    const stages = stagesFromArgs(argv);
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (stages) env.STAGES = stages;
    // `npm start` passes --dev: development defaults unless HOOKLINE_ENV says otherwise
    if (argv.includes('--dev')) env.HOOKLINE_ENV ??= 'development';
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n(known stages: ${STAGE_NAMES.join(', ')})\n`);
      process.exit(1);
    }
    throw err;
  }
  process.stderr.write(developmentNotice(config));
  const log = new Logger(config.logLevel, {}, logOutput(config.logFormat));
  // readable output has just said so above, on stderr
  if (config.relaxedDefaults.length > 0 && config.logFormat === 'json') log.warn('development mode: defaults relaxed', { relaxed: config.relaxedDefaults });
  let stopping = false;
  let stop: (() => Promise<void>) | undefined;
  const shutdown = (signal: string) => {
    if (stopping) {
      log.warn('second signal: exiting at once', { signal });
      process.exit(130);
    }
    stopping = true;
    log.info('stopping', { signal });
    void (stop ? stop() : Promise.resolve()).finally(() => process.exit(0));
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  try {
    const service = await startService(config, log);
    stop = service.stop;
    if (stopping) {
      await service.stop();
      process.exit(0);
    }
    // through the log lines' own writer, so that it comes after the lines written before it
    if (config.logFormat === 'pretty') writeStdoutLine(`${readyNotice(service, config)}${service.demoKey ? '' : '\n'}`);
    if (service.demoKey) writeStdoutLine(demoKeyNotice(service.demoKey, service.url ?? config.publicBaseUrl));
  } catch (err) {
    if (err instanceof MissingPrerequisite) {
      process.stderr.write(`${err.message}\n`);
    } else {
      process.stderr.write(`start-up failed: ${errorMessage(err)}\n`);
    }
    process.exit(1);
  }
}

void main();
