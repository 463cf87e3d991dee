/**
 * `promise`, or a rejection saying `<what> within <ms> ms` once `ms` have passed; the timer never
 * outlives it. An answer that came in time but was not read yet, because this process's event
 * loop was busy (or the process got no CPU) past the deadline, still counts: timers run before
 * I/O in a turn of the loop, so the rejection waits for the I/O of that turn (setImmediate runs
 * after it). Without that, a stalled loop reads as the other side not answering.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what = 'no answer'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let late: NodeJS.Immediate | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      late = setImmediate(() => reject(new Error(`${what} within ${ms} ms`)));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
    clearImmediate(late);
  });
}
