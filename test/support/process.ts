import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { BUILD_DIR } from '../../core/paths';

export const REPO_ROOT = path.resolve(__dirname, '../..');
export const TSX = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');

export interface Spawned {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  /** Resolves when stdout matches `pattern`. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/** What a child process printed, and a way to wait for a line of it. */
export interface CapturedOutput {
  stdout(): string;
  stderr(): string;
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

export function captureOutput(child: ChildProcess): CapturedOutput {
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    // kafkajs retries print a lot while a broker settles; keep the tail only
    if (err.length > 200_000) err = err.slice(-100_000);
  });
  return {
    stdout: () => out,
    stderr: () => err,
    waitForOutput(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no output matching ${pattern} within ${timeoutMs} ms; stderr: ${err.slice(-2000)}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

export function spawnScript(script: string, args: string[], env: NodeJS.ProcessEnv): Spawned {
  const child = spawn(TSX, [script, ...args], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, ...captureOutput(child) };
}

/**
 * Runs a script of the compiled tree, as `npm start` and the image do (`node dist/<script>.js`
 * with the start script's V8 flag), building it first when the sources changed since.
 */
export function spawnBuilt(script: string, args: string[], env: NodeJS.ProcessEnv): Spawned {
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build.cjs')], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const compiled = path.join(REPO_ROOT, BUILD_DIR, script.replace(/\.ts$/, '.js'));
  const child = spawn(process.execPath, ['--max-semi-space-size=64', compiled, ...args], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, ...captureOutput(child) };
}

/** Runs a script to its end and returns its exit code and output. */
export async function runScript(script: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnScript(script, args, env);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The environment without the variables that point at the run's shared infrastructure. */
export function envWithoutInfra(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  for (const name of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'REDIS_URL', 'CLICKHOUSE_URL']) delete env[name];
  return env;
}
