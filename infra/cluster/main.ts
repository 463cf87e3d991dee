import path from 'node:path';
import { developmentKekFile, loadConfig, ROLES, ConfigError } from '../../core/config';
import { loadKeyring } from '../../platform/secrets/keyring-source';
import { loadEvidenceSignerKey } from '../../platform/evidence/signing-key';
import { startCluster, type ProcessPlan, type RunningCluster } from './cluster';

/** One process per role: the deployment `npm run cluster` starts when told nothing else. */
const DEFAULT_ROLES: [string, number][] = [
  ['api', 1],
  ['ingest', 1],
  ['stage:validate', 1],
  ['stage:deliver', 2],
  ['stage:retry', 1],
  ['sequencer', 2],
  ['sink', 1],
];

const USAGE = 'usage: npm run cluster -- [--processes N | --role <role>[=count] ...] [--brokers N] [--data-dir DIR]';

/** The processes the arguments ask for: N whole processes, or processes by role. */
export function planOf(argv: string[]): { plan: ProcessPlan[]; brokers: number; dataDir: string | undefined } {
  let processes: number | undefined;
  let brokers = 3;
  let dataDir: string | undefined;
  const roles: [string, number][] = [];
  const value = (i: number, flag: string) => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new ConfigError([`${flag}: needs a value; ${USAGE}`]);
    return v;
  };
  const count = (flag: string, v: string, max: number) => {
    if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > max) throw new ConfigError([`${flag}: expected a whole number from 1 to ${max}, got "${v}"`]);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes('=') && arg.startsWith('--') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const take = () => inline ?? value(i++, flag);
    if (flag === '--processes') processes = count('--processes', take(), 16);
    else if (flag === '--brokers') brokers = count('--brokers', take(), 5);
    else if (flag === '--data-dir') dataDir = take();
    else if (flag === '--role') {
      const spec = take();
      const [role, n] = spec.split('=') as [string, string | undefined];
      if (!ROLES[role]) throw new ConfigError([`--role: unknown role "${role}"; roles: ${Object.keys(ROLES).join(', ')}`]);
      roles.push([role, n === undefined ? 1 : count(`--role ${role}`, n, 16)]);
    } else throw new ConfigError([`unknown argument "${arg}"; ${USAGE}`]);
  }
  if (processes !== undefined && roles.length > 0) throw new ConfigError([`--processes and --role: give one or the other; ${USAGE}`]);
  const plan: ProcessPlan[] = [];
  if (processes !== undefined) {
    for (let i = 1; i <= processes; i++) plan.push({ name: `hookline-${i}`, args: [] });
  } else {
    for (const [role, n] of roles.length > 0 ? roles : DEFAULT_ROLES) {
      for (let i = 1; i <= n; i++) plan.push({ name: `${role.replace(':', '-')}-${i}`, args: ['--role', role] });
    }
  }
  return { plan, brokers, dataDir };
}

async function main(): Promise<void> {
  let cluster: RunningCluster | undefined;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) process.exit(130);
    stopping = true;
    process.stderr.write('stopping the cluster...\n');
    await cluster?.stop();
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  try {
    const { plan, brokers, dataDir: dirArg } = planOf(process.argv.slice(2));
    // a local deployment: development defaults, said loudly by every process it starts
    const env: NodeJS.ProcessEnv = { ...process.env, HOOKLINE_ENV: process.env.HOOKLINE_ENV ?? 'development' };
    const dataDir = path.resolve(dirArg ?? process.env.DATA_DIR ?? '.data/cluster');
    const config = loadConfig({ ...env, DATA_DIR: dataDir });
    // every process opens the same stored secrets and signs the one evidence log with one key
    const keyring = loadKeyring(config.secrets);
    if (!env.SECRETS_KEK) env.SECRETS_KEK_FILE ??= config.secrets.kekFile ?? developmentKekFile(dataDir);
    env.EVIDENCE_SIGNING_KEY ??= loadEvidenceSignerKey({ signingKey: undefined, origin: config.evidenceOrigin, dataDir, keyring });
    cluster = await startCluster({
      dataDir,
      brokers,
      plan,
      env,
      say: (line) => process.stderr.write(`${line}\n`),
      firstHttpPort: config.port || 8080,
    });
    const rows = cluster.processes.map((p) => `  ${p.name.padEnd(22)} ${p.args.join(' ') || '(every stage)'}`.padEnd(58) + ` ${p.servesHttp ? p.url : `${p.url} (health)`}`);
    process.stdout.write(`\nhookline cluster up: ${cluster.kafka.brokers.length} brokers, ${cluster.processes.length} processes (data: ${dataDir})\n${rows.join('\n')}\n` +
      `  Kafka ${cluster.kafka.brokers.join(',')}\n  Redis ${cluster.redis.url}\n  ClickHouse ${cluster.clickhouse.url}\n  schema registry ${cluster.registryUrl}\n` +
      `logs: ${path.join(dataDir, 'processes', '<name>', 'service.log')}; Ctrl-C stops everything.\n`);
    const demoKey = cluster.demoKey();
    if (demoKey) process.stdout.write(`\nDemo tenant "demo" created. Its API key (shown once, keep it):\n\n  ${demoKey}\n\n`);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    await stop(1);
  }
}

if (require.main === module) void main();
