import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import { parse } from 'yaml';
import { SETTINGS } from '../../core/config';

/**
 * docker-compose.yml is checked here, without a Docker engine: against the Compose
 * specification's JSON schema, then for what the schema cannot see (volumes that are declared
 * but unused, a Kafka quorum that names the wrong brokers, variables the service does not read).
 */

/** The roles `service/main.ts --role` accepts. */
const ROLES = ['ingest', 'api', 'stage:validate', 'stage:deliver', 'stage:retry', 'sequencer', 'sink'];
/** Variables the service reads besides its documented settings. */
const EXTRA_SERVICE_VARIABLES = ['BUILD_COMMIT'];

type Doc = Record<string, unknown>;

const COMPOSE_FILE = path.resolve(__dirname, '../../docker-compose.yml');
// Docker Compose resolves YAML merge keys (`<<: *anchor`); so must the parser
const compose = parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as Doc;

function mapping(value: unknown, what: string): Doc {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${what} is not a mapping`);
  return value as Doc;
}

const services = mapping(compose.services, 'services');
const serviceNames = Object.keys(services);
const service = (name: string) => mapping(services[name], `service ${name}`);

/** A service's environment, from either the mapping or the `KEY=value` list form. */
function environmentOf(name: string): Record<string, string> {
  const env = service(name).environment ?? {};
  const pairs = Array.isArray(env)
    ? env.map((line) => {
        const [key = '', ...rest] = String(line).split('=');
        return [key, rest.join('=')];
      })
    : Object.entries(mapping(env, `environment of ${name}`)).map(([key, value]) => [key, String(value)]);
  return Object.fromEntries(pairs);
}

/** The named volumes a service mounts (bind mounts start with `.`, `/` or `~`). */
function namedVolumesOf(name: string): { volume: string; target: string }[] {
  const volumes = service(name).volumes ?? [];
  if (!Array.isArray(volumes)) throw new Error(`volumes of ${name} is not a list`);
  return volumes.flatMap((v: unknown) => {
    if (typeof v === 'string') {
      const [source = '', target = ''] = v.split(':');
      return /^[.~/]/.test(source) || target === '' ? [] : [{ volume: source, target }];
    }
    const long = mapping(v, `a volume of ${name}`);
    return long.type === 'volume' && typeof long.source === 'string' ? [{ volume: long.source, target: String(long.target) }] : [];
  });
}

function dependenciesOf(name: string): string[] {
  const deps = service(name).depends_on ?? [];
  return Array.isArray(deps) ? deps.map(String) : Object.keys(mapping(deps, `depends_on of ${name}`));
}

function commandOf(name: string): string[] {
  const command = service(name).command;
  if (!Array.isArray(command)) throw new Error(`service ${name} has no command list`);
  return command.map(String);
}

const brokers = serviceNames.filter((name) => String(service(name).image ?? '').startsWith('apache/kafka:'));
// the roles of the service are the services built from this repository
const roles = serviceNames.filter((name) => service(name).build !== undefined);

describe('docker-compose.yml', () => {
  it('is valid against the Compose specification schema', () => {
    const specFile = require.resolve('docker-compose/schema/compose-spec.json');
    // Ajv has draft-07 built in under its own id; the file names it by another spelling
    const { $schema: _draft, ...spec } = JSON.parse(readFileSync(specFile, 'utf8')) as Doc;
    // the spec is written for any draft-07 validator, not for Ajv's strict subset (union types)
    const validate = new Ajv({ allErrors: true, strict: false }).compile(spec);
    expect(validate(compose) ? [] : validate.errors).toEqual([]);
    // and the check is not vacuous: an unknown service key is refused
    expect(validate({ services: { x: { image: 'redis', restarts: 'always' } } })).toBe(false);
  });

  it('mounts every named volume it declares, and declares every named volume it mounts', () => {
    const declared = Object.keys(mapping(compose.volumes ?? {}, 'volumes')).sort();
    const mounted = [...new Set(serviceNames.flatMap((name) => namedVolumesOf(name).map((m) => m.volume)))].sort();
    expect(mounted).toEqual(declared);
  });

  it('runs three Kafka brokers as one KRaft quorum, each keeping its log in its own volume', () => {
    expect(brokers).toHaveLength(3);
    const envs = brokers.map(environmentOf);
    expect(new Set(envs.map((e) => e.KAFKA_NODE_ID)).size).toBe(3);
    expect(new Set(envs.map((e) => e.CLUSTER_ID)).size).toBe(1);
    expect(envs[0]?.CLUSTER_ID).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const voters = brokers.map((name, i) => `${envs[i]?.KAFKA_NODE_ID}@${name}:9093`).sort();
    const volumes = new Set<string>();
    brokers.forEach((name, i) => {
      const env = envs[i]!;
      expect({ name, voters: env.KAFKA_CONTROLLER_QUORUM_VOTERS?.split(',').sort() }).toEqual({ name, voters });
      // reachable from the other containers by service name
      expect({ name, advertised: env.KAFKA_ADVERTISED_LISTENERS }).toEqual({ name, advertised: `PLAINTEXT://${name}:9092` });
      expect({ name, roles: env.KAFKA_PROCESS_ROLES }).toEqual({ name, roles: 'broker,controller' });
      expect({ name, rf: env.KAFKA_DEFAULT_REPLICATION_FACTOR, minIsr: env.KAFKA_MIN_INSYNC_REPLICAS, offsetsRf: env.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR, unclean: env.KAFKA_UNCLEAN_LEADER_ELECTION_ENABLE, autoCreate: env.KAFKA_AUTO_CREATE_TOPICS_ENABLE })
        .toEqual({ name, rf: '3', minIsr: '2', offsetsRf: '3', unclean: 'false', autoCreate: 'false' });
      const logVolume = namedVolumesOf(name).find((m) => m.target === env.KAFKA_LOG_DIRS);
      expect({ name, logDirs: env.KAFKA_LOG_DIRS, volume: logVolume !== undefined }).toEqual({ name, logDirs: env.KAFKA_LOG_DIRS, volume: true });
      volumes.add(logVolume!.volume);
      expect(service(name).healthcheck).toBeDefined();
    });
    expect(volumes.size).toBe(3);
  });

  it('points the schema registry at every broker', () => {
    const env = environmentOf('schema-registry');
    expect(env.SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS?.split(',').sort()).toEqual(brokers.map((b) => `PLAINTEXT://${b}:9092`).sort());
    expect(env.SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR).toBe('3');
  });

  it('runs every role of the service, each service one valid role', () => {
    const run = roles.map((name) => {
      const command = commandOf(name);
      const at = command.indexOf('--role');
      expect({ name, hasRole: at >= 0 }).toEqual({ name, hasRole: true });
      return command[at + 1] ?? '';
    });
    for (const role of run) expect(ROLES).toContain(role);
    expect([...run].sort()).toEqual([...ROLES].sort());
  });

  it("runs every role as the image's own command does: the compiled service, with the image's flags", () => {
    const dockerfile = readFileSync(path.resolve(__dirname, '../../Dockerfile'), 'utf8');
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)?.[1] ?? '[]') as string[];
    expect(cmd).toEqual(['node', '--max-semi-space-size=64', 'dist/service/main.js']);
    for (const name of roles) expect({ name, command: commandOf(name).slice(0, cmd.length) }).toEqual({ name, command: cmd });
  });

  it('gives the roles only documented settings, all three brokers and the keys they must share', () => {
    const known = new Set([...SETTINGS.map((s) => s.env), ...EXTRA_SERVICE_VARIABLES]);
    for (const name of roles) {
      const env = environmentOf(name);
      expect({ name, undocumented: Object.keys(env).filter((k) => !known.has(k)) }).toEqual({ name, undocumented: [] });
      expect({ name, brokers: env.KAFKA_BROKERS?.split(',').sort() }).toEqual({ name, brokers: brokers.map((b) => `${b}:9092`).sort() });
      // required at `docker compose up`, never defaulted: the processes must share them
      for (const key of ['SECRETS_KEK', 'EVIDENCE_SIGNING_KEY']) expect({ name, key, value: env[key] }).toEqual({ name, key, value: expect.stringMatching(new RegExp(`^\\$\\{${key}:\\?`)) });
      expect({ name, healthcheck: JSON.stringify(service(name).healthcheck) }).toEqual({ name, healthcheck: expect.stringContaining('/readyz') });
    }
  });

  it('scales the roles that share work or stand by', () => {
    const replicas = (name: string) => mapping(service(name).deploy ?? {}, `deploy of ${name}`).replicas ?? 1;
    expect({ deliver: replicas('deliver'), sequencer: replicas('sequencer') }).toEqual({ deliver: 2, sequencer: 2 });
  });

  it('depends only on services it defines', () => {
    for (const name of serviceNames) {
      const missing = dependenciesOf(name).filter((d) => !serviceNames.includes(d));
      expect({ name, missing }).toEqual({ name, missing: [] });
    }
  });
});
