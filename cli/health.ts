import { CliError } from './connect';

/** One process's readiness, as `/readyz` answers it. */
export interface ProcessHealth {
  url: string;
  ready: boolean;
  /** The dependencies that are down or starting (empty when ready). */
  failing: string[];
  stages: string[];
  /** Why the process could not be asked, when it could not. */
  error?: string;
}

/**
 * Asks `/readyz` of each process: ready, or what is down. A process that does not answer is
 * reported as such, not thrown: one line per process is what an operator scripting a check wants.
 */
export async function checkHealth(urls: string[], timeoutMs = 5_000): Promise<ProcessHealth[]> {
  if (urls.length === 0) throw new CliError('health needs the URL of at least one process (--url <base>, repeatable), or runs beside `npm start`');
  return Promise.all(
    urls.map(async (raw): Promise<ProcessHealth> => {
      let base: URL;
      try {
        base = new URL(raw);
      } catch {
        throw new CliError(`--url: not a URL: "${raw}"`);
      }
      const url = base.origin;
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(timeoutMs) });
        const body = (await res.json()) as { failing?: string[]; stages?: string[] };
        return { url, ready: res.status === 200, failing: body.failing ?? [], stages: body.stages ?? [] };
      } catch (err) {
        return { url, ready: false, failing: [], stages: [], error: err instanceof Error ? err.message : String(err) };
      }
    }),
  );
}
