import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Admin } from 'kafkajs';
import { groupIdOf, groupPrefixOf, type ConsumerName } from '../../core/topics';
import { captureOutput, REPO_ROOT, TSX } from './process';

/**
 * The service as its own process (`tsx service/main.ts`), started detached in a process group
 * of its own, so that a test can kill all of it at once: the tsx wrapper and the node process
 * it runs the service in.
 */
export interface ServiceProcess {
  child: ChildProcess;
  /** The process group: the wrapper's pid. */
  pgid: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

const started = new Set<number>();
// a last resort if the test process goes away without its afterAll: nothing outlives it
process.once('exit', () => {
  for (const pgid of started) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

export function spawnService(env: NodeJS.ProcessEnv, options: { direct?: boolean } = {}): ServiceProcess {
  // direct: node runs the service itself (tsx as a loader), so SIGTERM reaches the service's own
  // handler; the tsx wrapper relays it, but kills a child that does not answer its relay at once
  // (a loaded machine), which skips the graceful stop a test may be about
  const child = options.direct
    ? spawn(process.execPath, ['--import', 'tsx', 'service/main.ts'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    : spawn(TSX, ['service/main.ts'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  if (child.pid === undefined) throw new Error('the service process did not start');
  const pgid = child.pid;
  started.add(pgid);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    }),
  );
  return { child, pgid, exited, ...captureOutput(child) };
}

/**
 * The environment of one more service process joining the deployment of a test service (its
 * topics, its Kafka and Redis from this environment) in a data directory of its own named
 * `name`; `settings` (its stages, and what the test sets) come last.
 */
export function joiningEnv(config: { topicPrefix: string; dataDir: string }, name: string, settings: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...process.env,
    TOPIC_PREFIX: config.topicPrefix,
    DATA_DIR: mkdtempSync(path.join(config.dataDir, `${name}-`)),
    KAFKA_REPLICATION_FACTOR: '1',
    KAFKA_PARTITIONS: '2',
    BOOTSTRAP_DEMO_TENANT: 'false',
    LOG_LEVEL: 'info',
    DESTINATION_ALLOWED_NETWORKS: 'loopback',
    ...settings,
  };
}

/** Waits until a consumer group of the deployment is Stable with `members` members (the processes that joined it have their partitions). */
export async function waitForGroupMembers(admin: Admin, topicPrefix: string, consumer: ConsumerName, members: number, timeoutMs = 60_000): Promise<void> {
  const group = groupIdOf(groupPrefixOf(topicPrefix), consumer);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { groups } = await admin.describeGroups([group]);
    if (groups[0]?.state === 'Stable' && groups[0].members.length === members) return;
    if (Date.now() > deadline) throw new Error(`${members} processes in the ${consumer} group: not reached within ${timeoutMs} ms (${groups[0]?.state}, ${groups[0]?.members.length ?? 0} members)`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Pids of the live (not zombie) processes of a process group, from /proc. */
export function livePidsOfGroup(pgid: number): number[] {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    // no /proc: ask the kernel whether the group has any member left
    try {
      process.kill(-pgid, 0);
      return [pgid];
    } catch {
      return [];
    }
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = fields[0];
    const pgrp = Number(fields[2]);
    if (pgrp === pgid && state !== 'Z' && state !== 'X') pids.push(Number(entry));
  }
  return pids;
}

/** Sends `signal` to the whole process group; false when the group had no member left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Waits until no live process is left in the group; throws naming the survivors. */
export async function waitForGroupGone(pgid: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const alive = livePidsOfGroup(pgid);
    if (alive.length === 0) {
      started.delete(pgid);
      return;
    }
    if (Date.now() > deadline) throw new Error(`process group ${pgid} still has live processes after ${timeoutMs} ms: ${alive.join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Stops the service: SIGTERM to the wrapper (which passes it on to the service), and after
 * `graceMs` SIGKILL to the whole group. Resolves once nothing of it is left.
 */
export async function stopService(p: ServiceProcess, graceMs = 25_000): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) {
    p.child.kill('SIGTERM');
    const timer = setTimeout(() => signalGroup(p.pgid, 'SIGKILL'), graceMs);
    await p.exited;
    clearTimeout(timer);
  }
  // the service itself may outlive the wrapper for a moment
  try {
    await waitForGroupGone(p.pgid, 5_000);
  } catch {
    signalGroup(p.pgid, 'SIGKILL');
    await waitForGroupGone(p.pgid, 10_000);
  }
}

/** Polls GET /v1/mcp/health until it answers 200; fails early if the process exits. */
export async function waitForHealth(baseUrl: string, p: ServiceProcess, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  let last = '';
  for (;;) {
    try {
      const res = await fetch(`${baseUrl}/v1/mcp/health`, { signal: AbortSignal.timeout(5_000) });
      if (res.status === 200) return Date.now() - t0;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (p.child.exitCode !== null || p.child.signalCode !== null) {
      throw new Error(`the service exited (${p.child.exitCode ?? p.child.signalCode}) before health 200\nstdout: ${p.stdout().slice(-2000)}\nstderr: ${p.stderr().slice(-3000)}`);
    }
    if (Date.now() - t0 > timeoutMs) {
      throw new Error(`health not 200 within ${timeoutMs} ms; last answer: ${last.slice(0, 1000)}\nstdout: ${p.stdout().slice(-2000)}\nstderr: ${p.stderr().slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Calls the API of a service process with an API key. */
export async function callApi(baseUrl: string, key: string, method: string, pathname: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${baseUrl}${pathname}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed };
}
