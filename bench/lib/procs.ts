import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { sleep } from './stats';

export const REPO_ROOT = path.resolve(__dirname, '../..');

/**
 * A TypeScript entry point run as `node --import tsx <script>` (the service: compiled, as in
 * production, `node dist/service/main.js`) in a process group of its own:
 * one node process (no wrapper), so its pid is the one whose CPU and RSS are read, and the
 * whole group can be killed at once. Output goes to a file, never through a pipe the load
 * generator would have to drain.
 */
export interface Child {
  name: string;
  pid: number;
  logFile: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  /** Resolves with the first match of `pattern` in the child's output. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  stop(graceMs?: number): Promise<void>;
}

const children = new Set<Child>();

/** Kills every child group still alive: the last step on any exit path. */
export function killAllChildren(): void {
  for (const c of children) {
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  children.clear();
}
process.once('exit', killAllChildren);

/**
 * The V8 flags `npm start` gives the service (package.json), given to every process of the run,
 * so that the baselines run on the same runtime settings as the service.
 */
const NODE_FLAGS = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start.split(/\s+/).filter((w) => w.startsWith('--max-semi-space-size'));

/** The compiled service, built first when the sources changed since (scripts/build.cjs). */
function builtService(): string {
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build.cjs')], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  return path.join(REPO_ROOT, 'dist', 'service', 'main.js');
}

/** Another checkout of the project (an earlier commit, its own node_modules) and the node it runs on. */
export interface OtherTree {
  dir: string;
  node: string;
}

export function spawnScript(name: string, script: string, args: string[], env: NodeJS.ProcessEnv, logFile: string, from?: OtherTree): Child {
  const fd = openSync(logFile, 'a');
  // BENCH_PROFILE_DIR: service processes write a V8 CPU profile there when they exit
  const profile = process.env.BENCH_PROFILE_DIR && script === 'service/main.ts' ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  // another tree runs its script as its own `npm start` did before compiled builds: through tsx
  const entry = from ? ['--import', 'tsx', script] : script === 'service/main.ts' ? [builtService()] : ['--import', 'tsx', script];
  const child = spawn(from?.node ?? process.execPath, [...profile, ...NODE_FLAGS, ...entry, ...args], { cwd: from?.dir ?? REPO_ROOT, env, stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`${name} did not start`);
  const pid = child.pid;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const handle: Child = {
    name,
    pid,
    logFile,
    child,
    exited,
    alive,
    async waitForOutput(pattern, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = readFileSync(logFile, 'utf8').match(pattern);
        if (m) return m;
        if (!alive()) throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}; last output:\n${tail(logFile, 3000)}`);
        if (Date.now() > deadline) throw new Error(`${name} printed no ${pattern} within ${timeoutMs} ms; last output:\n${tail(logFile, 3000)}`);
        await sleep(100);
      }
    },
    async stop(graceMs = 20_000) {
      if (alive()) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      // anything the process left in its group goes too
      signalGroup(pid, 'SIGKILL');
      children.delete(handle);
    },
  };
  children.add(handle);
  return handle;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* already gone */
  }
}

export function tail(file: string, chars: number): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return '';
  }
}

/** Kernel clock ticks per second, the unit of utime and stime in /proc/<pid>/stat. */
export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  /** utime + stime, in clock ticks. */
  ticks: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(f[1]), pgrp: Number(f[2]), ticks: Number(f[11]) + Number(f[12]) };
  } catch {
    return undefined;
  }
}

function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const s = readStat(Number(e));
    if (s) out.push(s);
  }
  return out;
}

/**
 * Every process this run is made of: this process, its descendants, and every member of
 * their process groups (a detached broker or service keeps its group), so the JVM, the
 * service, the receiver and this load generator are all counted.
 */
export function runProcesses(): ProcStat[] {
  const stats = allStats();
  const byParent = new Map<number, ProcStat[]>();
  for (const s of stats) {
    let l = byParent.get(s.ppid);
    if (!l) byParent.set(s.ppid, (l = []));
    l.push(s);
  }
  const picked = new Map<number, ProcStat>();
  const self = stats.find((s) => s.pid === process.pid);
  const queue = self ? [self] : [];
  while (queue.length > 0) {
    const s = queue.pop()!;
    if (picked.has(s.pid)) continue;
    picked.set(s.pid, s);
    queue.push(...(byParent.get(s.pid) ?? []));
  }
  const groups = new Set([...picked.values()].filter((s) => s.pid !== process.pid).map((s) => s.pgrp));
  for (const s of stats) if (groups.has(s.pgrp) && !picked.has(s.pid)) picked.set(s.pid, s);
  return [...picked.values()];
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/**
 * CPU ticks per named part of the run; `groups` names process groups (service, receiver, ...).
 * A named group wins over the broker and Redis found by their command line, so that a second
 * redis-server can be told apart from the service's.
 */
export function cpuSnapshot(groups: Record<string, number>): Map<number, { part: string; ticks: number }> {
  const byGroup = new Map(Object.entries(groups).map(([name, pgid]) => [pgid, name]));
  const snap = new Map<number, { part: string; ticks: number }>();
  for (const s of runProcesses()) {
    const cmd = s.pid === process.pid || byGroup.has(s.pgrp) ? '' : cmdline(s.pid);
    const part = s.pid === process.pid ? 'load generator' : byGroup.get(s.pgrp) ?? (cmd.includes('kafka.Kafka') ? 'broker JVM' : cmd.includes('redis-server') ? 'redis' : 'other');
    snap.set(s.pid, { part, ticks: s.ticks });
  }
  return snap;
}

/** CPU microseconds spent between two snapshots, per part and in total (processes in both). */
export function cpuBetween(before: Map<number, { part: string; ticks: number }>, after: Map<number, { part: string; ticks: number }>): { totalUs: number; byPart: Record<string, number> } {
  const byPart: Record<string, number> = {};
  let totalUs = 0;
  for (const [pid, a] of after) {
    const b = before.get(pid);
    const us = ((a.ticks - (b?.ticks ?? 0)) * 1e6) / CLK_TCK;
    byPart[a.part] = (byPart[a.part] ?? 0) + us;
    totalUs += us;
  }
  return { totalUs, byPart };
}

/** Resident set size of one process in bytes, from /proc/<pid>/status VmRSS. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
