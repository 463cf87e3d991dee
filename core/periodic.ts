/** A job run every so often, one run at a time: what the sink's ClickHouse jobs (retention sweeps, analytics rollups) share. */
export interface Periodic<T> {
  /** Runs the job now, or joins the run under way; the next timed run is an interval after it ends. */
  runNow(): Promise<T>;
  /** No more runs; resolves once a run under way has ended. */
  stop(): Promise<void>;
}

/**
 * Runs `job` every `intervalMs` after the previous run ended, the first an interval after the
 * start. A run that fails is handed to `failed` and the next one comes as usual. The timer does
 * not keep the process alive.
 */
export function every<T>(intervalMs: number, job: () => Promise<T>, failed: (err: unknown) => void): Periodic<T> {
  let running: Promise<T> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const runNow = (): Promise<T> => {
    running ??= job().finally(() => {
      running = undefined;
    });
    return running;
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      runNow().catch(failed).finally(schedule);
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    runNow,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
