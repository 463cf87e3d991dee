import { Logger } from '../../core/log';
import { runScript } from '../support/process';

/** Log lines are written to stdout once per event-loop turn; none may be lost when the process ends. */
describe('stdout log lines', () => {
  it.each([
    ['the event loop runs dry', 'end', 0],
    ['process.exit is called right after logging', 'exit', 3],
    ['an uncaught exception ends the process', 'throw', 1],
  ])('are all written, in order, when %s', async (_what, how, code) => {
    const r = await runScript('test/support/log-lines.ts', [how as string, '500'], process.env);
    expect(r.code).toBe(code);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; i: number });
    expect(lines.map((l) => l.i)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(lines.every((l) => l.msg === 'line')).toBe(true);
  });
});

describe('log line fields', () => {
  const capture = (base: Record<string, unknown> = {}) => {
    const lines: string[] = [];
    return { log: new Logger('info', base, (line) => lines.push(line)), lines };
  };

  it('writes an Error field, at any depth, as its name and message', () => {
    const { log, lines } = capture();
    log.warn('failed', { error: new TypeError('bad input'), nested: { cause: new RangeError('too far') }, n: 1 });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', msg: 'failed', error: { name: 'TypeError', message: 'bad input' }, nested: { cause: { name: 'RangeError', message: 'too far' } }, n: 1 });
    const child = capture({ cause: new Error('from the base') });
    child.log.info('x');
    expect(JSON.parse(child.lines[0]!)).toMatchObject({ cause: { name: 'Error', message: 'from the base' } });
  });

  it('writes plain fields as they are', () => {
    const { log, lines } = capture({ stage: 'deliver' });
    log.info('delivered', { delivery_id: 'dlv_1', attempt: 2, ok: true, none: null });
    expect(JSON.parse(lines[0]!)).toEqual({ ts: expect.any(String), level: 'info', msg: 'delivered', stage: 'deliver', delivery_id: 'dlv_1', attempt: 2, ok: true, none: null });
  });
});
