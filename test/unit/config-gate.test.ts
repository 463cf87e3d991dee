import { Logger } from '../../core/log';
import { CONFIG_VERSION_HEADER, ConfigGate, requiredVersion, stampVersion, type ConfigVersions } from '../../pipeline/runtime/config-version';
import type { AnyOutput } from '../../pipeline/runtime/stage';

/** A store whose version the test moves by hand. */
function versions(start: bigint): ConfigVersions & { set(v: bigint): void; waits: number } {
  let version = start;
  const waiters: { v: bigint; resolve(reached: boolean): void }[] = [];
  return {
    waits: 0,
    get version() {
      return version;
    },
    set(v) {
      version = v;
      for (const w of waiters.splice(0)) if (w.v <= v) w.resolve(true); else waiters.push(w);
    },
    waitForVersion(v, timeoutMs) {
      this.waits++;
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        waiters.push({ v, resolve: (reached) => (clearTimeout(timer), resolve(reached)) });
      });
    },
  };
}

const lines = () => {
  const out: string[] = [];
  return { out, log: new Logger('warn', {}, (line) => out.push(line)) };
};

describe('the configuration version gate', () => {
  it('reads the header as a decimal version, 0 when absent or not a number', () => {
    expect(requiredVersion({ [CONFIG_VERSION_HEADER]: Buffer.from('42') })).toBe(42n);
    expect(requiredVersion({ [CONFIG_VERSION_HEADER]: '7' })).toBe(7n);
    expect(requiredVersion({})).toBe(0n);
    expect(requiredVersion(undefined)).toBe(0n);
    expect(requiredVersion({ [CONFIG_VERSION_HEADER]: Buffer.from('-1') })).toBe(0n);
  });

  it('stamps every output, keeping the headers it had', () => {
    const out: AnyOutput = { topic: 't', key: 'k', record: 'EventTransition', value: {} as never, headers: { 'hookline-chained': 'filter' } };
    expect(stampVersion([out], 12n)[0]!.headers).toEqual({ 'hookline-chained': 'filter', [CONFIG_VERSION_HEADER]: '12' });
  });

  it('costs nothing when this process already has the version, or the record asks for none', () => {
    const store = versions(10n);
    const gate = new ConfigGate(store, 5_000, lines().log);
    expect(gate.ready(10n)).toBeUndefined();
    expect(gate.ready(3n)).toBeUndefined();
    expect(gate.ready(0n)).toBeUndefined();
    expect(store.waits).toBe(0);
    expect(new ConfigGate(undefined, 5_000, lines().log).ready(99n)).toBeUndefined();
  });

  it('waits until this process has the version, and names the newer of the two on what it decides', async () => {
    const store = versions(4n);
    const gate = new ConfigGate(store, 5_000, lines().log);
    let done = false;
    const waiting = gate.ready(6n)!.then(() => (done = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    store.set(6n);
    await waiting;
    expect(gate.decided(6n)).toBe(6n);
    store.set(9n);
    expect(gate.decided(6n)).toBe(9n);
    expect(gate.decided(0n)).toBe(9n);
    expect(new ConfigGate(undefined, 5_000, lines().log).decided(5n)).toBe(5n);
  });

  it('goes ahead after the wait, and warns once per interval with how many went ahead', async () => {
    const store = versions(1n);
    const { out, log } = lines();
    const gate = new ConfigGate(store, 30, log);
    await gate.ready(5n);
    await Promise.all([gate.ready(5n), gate.ready(6n)]);
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0]!)).toMatchObject({ level: 'warn', required_version: '5', config_version: '1', wait_ms: 30, records: 1 });
  });
});
