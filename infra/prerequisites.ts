import { spawnSync } from 'node:child_process';

/** A tool the local infrastructure needs and cannot install by itself. */
export class MissingPrerequisite extends Error {
  constructor(readonly tool: string, hint: string) {
    super(`missing prerequisite: ${tool} (${hint})`);
    this.name = 'MissingPrerequisite';
  }
}

function versionOutput(command: string, args: string[]): string | undefined {
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: 30_000 });
  if (r.error || r.status !== 0) return undefined;
  return `${r.stdout}${r.stderr}`;
}

export function requireJava(): void {
  const out = versionOutput('java', ['-version']);
  const hint = 'install Java 17 or newer, e.g. `apt-get install openjdk-17-jre-headless`, or set KAFKA_BROKERS';
  if (out === undefined) throw new MissingPrerequisite('java', hint);
  const m = /version "(\d+)(?:\.(\d+))?/.exec(out);
  const major = m ? (m[1] === '1' ? Number(m[2]) : Number(m[1])) : 0;
  if (major < 17) throw new MissingPrerequisite('java 17+', `found ${m ? m[0] : 'an unknown version'}; ${hint}`);
}

export function requireMaven(): void {
  if (versionOutput('mvn', ['-v']) === undefined) {
    throw new MissingPrerequisite('mvn', 'install Apache Maven, e.g. `apt-get install maven`, or set KAFKA_BROKERS');
  }
}

export function requireRedisServer(): void {
  if (versionOutput('redis-server', ['--version']) === undefined) {
    throw new MissingPrerequisite('redis-server', 'install Redis, e.g. `apt-get install redis-server`, or set REDIS_URL');
  }
}
