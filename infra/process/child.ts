import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import path from 'node:path';
import { sourceDir } from '../../core/paths';

const TETHER = path.join(sourceDir(__dirname), 'tether.sh');

/** A long-running helper process (broker, redis-server) that cannot outlive this process. */
export interface ChildHandle {
  readonly name: string;
  readonly pid: number;
  /** Resolves once the process has ended: its exit code, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** True once stop() was called: an exit after that is expected. */
  readonly stopping: boolean;
  /** SIGTERM, then SIGKILL to the whole group after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();

// Last resort on a plain exit: the tether would also notice, but this is immediate.
process.once('exit', () => {
  for (const child of live) {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
});

export function spawnTethered(
  name: string,
  command: string,
  args: string[],
  options: { logFile: string; env?: NodeJS.ProcessEnv; cwd?: string },
): ChildHandle {
  const log = openSync(options.logFile, 'a');
  const child = spawn('bash', [TETHER, command, ...args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    // own process group: Ctrl-C in a terminal reaches only us, and we stop children in order
    detached: true,
    stdio: ['pipe', log, log],
  });
  closeSync(log);
  if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
  live.add(child);
  // the pipe must not keep the event loop alive, nor crash us when the child ends first
  child.stdin?.on('error', () => undefined);
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  child.unref();
  const pid = child.pid;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  let stopping = false;
  return {
    name,
    pid,
    exited,
    get stopping() {
      return stopping;
    },
    async stop(graceMs = 15_000) {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
