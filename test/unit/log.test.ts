import { Logger, logOutput, prettyOutput, type LogRecord } from '../../core/log';
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

  it('stamps each line with the time it is written, in ISO 8601 UTC to the millisecond, across seconds', () => {
    const { log, lines } = capture();
    const times = ['2026-11-26T09:59:59.998Z', '2026-11-26T09:59:59.999Z', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:00.007Z', '2026-11-26T10:00:00.042Z', '2026-11-26T10:00:00.300Z', '2027-01-01T00:00:00.001Z'];
    jest.useFakeTimers();
    try {
      for (const t of times) {
        jest.setSystemTime(new Date(t));
        log.info('tick');
      }
    } finally {
      jest.useRealTimers();
    }
    expect(lines.map((l) => (JSON.parse(l) as { ts: string }).ts)).toEqual(times);
  });
});

describe('log lines', () => {
  const capture = (level: 'debug' | 'info' = 'info') => {
    const lines: string[] = [];
    const records: LogRecord[] = [];
    const log = new Logger(level, {}, (line) => lines.push(line));
    log.addSink((r) => records.push(r));
    return { log, lines, records, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
  };

  it('are one JSON object each, with a string level, an ISO time and the message', () => {
    const { log, lines, parsed } = capture('debug');
    log.debug('d');
    log.info('i', { n: 1 });
    log.warn('w');
    log.error('e');
    expect(lines.every((l) => l.endsWith('\n') && l.indexOf('\n') === l.length - 1)).toBe(true);
    expect(parsed().map((l) => [l.level, l.msg])).toEqual([['debug', 'd'], ['info', 'i'], ['warn', 'w'], ['error', 'e']]);
    expect(parsed().every((l) => typeof l.ts === 'string' && new Date(l.ts).toISOString() === l.ts)).toBe(true);
  });

  it('leave out what is below the level, for stdout and the sinks alike', () => {
    const { log, lines, records } = capture('info');
    log.debug('hidden');
    log.info('shown');
    log.setLevel('warn');
    log.info('hidden too');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['shown']);
    expect(records.map((r) => r.msg)).toEqual(['shown']);
  });

  it('carry the fields of every child and any field given, such as a trace id', () => {
    const { log, parsed, records } = capture();
    const request = log.child({ request_id: 'req_1' }).child({ trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' });
    request.warn('slow', { span_id: '00f067aa0ba902b7', ms: 812 });
    expect(parsed()[0]).toMatchObject({ level: 'warn', msg: 'slow', request_id: 'req_1', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7', ms: 812 });
    // a child shares the sinks, also those added after it was made
    expect(records[0]).toMatchObject({ msg: 'slow', request_id: 'req_1', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' });
  });

  it('name a field once when a call gives one its logger already carries, with the value of the call', () => {
    const { log, lines, records } = capture('debug');
    const child = log.child({ stage: 'deliver', tenant_id: 'acme' }).child({ request_id: 'req_1' });
    child.info('moved', { stage: 'retry', attempt: 2 });
    child.printOnly('warn', 'again', { request_id: 'req_2' });
    child.debug('plain', { attempt: 3 });
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line.match(/"(stage|request_id)":/g)?.length).toBe(2);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'moved', stage: 'retry', tenant_id: 'acme', request_id: 'req_1', attempt: 2 });
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 'warn', msg: 'again', stage: 'deliver', request_id: 'req_2' });
    expect(JSON.parse(lines[2]!)).toMatchObject({ level: 'debug', stage: 'deliver', request_id: 'req_1', attempt: 3 });
    expect(records.map((r) => [r.msg, r.stage])).toEqual([['moved', 'retry'], ['plain', 'deliver']]);
    // the level of the logger still rules a merged line
    child.setLevel('error');
    child.warn('hidden', { stage: 'x' });
    expect(lines).toHaveLength(3);
  });

  it('go to the sinks as written, but a printOnly line does not', () => {
    const { log, lines, records } = capture();
    log.info('to both', { tenant_id: 'ten_1' });
    log.printOnly('info', 'stdout only', { tenant_id: 'ten_1' });
    expect(lines).toHaveLength(2);
    expect(records).toEqual([JSON.parse(lines[0]!)]);
  });

  it('redact secrets by path, at the top, one level down and in headers, on stdout and in the sinks', () => {
    const { log, lines, records } = capture();
    const headers = { 'content-type': 'application/json', Authorization: 'Bearer hlk_abc', cookie: 'sid=s3', 'x-api-key': 'k-123' };
    const config = { signing_secret: 'whsec_1', header: 'x-signature', nested: { password: 'p4ss' } };
    const destination = { url: 'https://example.com', auth: { type: 'bearer', token: 'tok_9' }, secret: 'whsec_2' };
    const sent = [{ name: 'authorization', value: 'Basic dXNlcjpwYXNz' }, { name: 'x-signature', value: 'sha256=ab' }];
    const copies = JSON.stringify({ headers, config, destination, sent });
    log.child({ api_key: 'hlk_child' }).warn('change', { secret: 's-top', token: 't-top', password: 'p-top', authorization: 'Bearer top', headers, config, destination, sent, note: 'keeps this' });
    const line = lines[0]!;
    for (const secret of ['hlk_abc', 'sid=s3', 'k-123', 'whsec_1', 'p4ss', 'tok_9', 'whsec_2', 'dXNlcjpwYXNz', 's-top', 't-top', 'p-top', 'Bearer top', 'hlk_child']) expect(line).not.toContain(secret);
    const written = JSON.parse(line);
    expect(written).toMatchObject({
      api_key: '[redacted]', secret: '[redacted]', token: '[redacted]', password: '[redacted]', authorization: '[redacted]', note: 'keeps this',
      headers: { 'content-type': 'application/json', Authorization: '[redacted]', cookie: '[redacted]', 'x-api-key': '[redacted]' },
      config: { signing_secret: '[redacted]', header: 'x-signature', nested: { password: '[redacted]' } },
      destination: { url: 'https://example.com', auth: { type: 'bearer', token: '[redacted]' }, secret: '[redacted]' },
      sent: [{ name: 'authorization', value: '[redacted]' }, { name: 'x-signature', value: 'sha256=ab' }],
    });
    expect(records[0]).toEqual(written);
    // the caller's objects are left as they were
    expect(JSON.stringify({ headers, config, destination, sent })).toBe(copies);
  });

  it('print a readable line, not JSON, in pretty format', () => {
    const out: string[] = [];
    const records: LogRecord[] = [];
    const log = new Logger('info', {}, prettyOutput((line) => out.push(line), false));
    log.addSink((r) => records.push(r));
    log.info('service ready', { url: 'http://127.0.0.1:8080', password: 'p4ss' });
    // the sinks still get the record itself
    expect(records).toEqual([{ level: 'info', ts: expect.any(String), msg: 'service ready', url: 'http://127.0.0.1:8080', password: '[redacted]' }]);
    expect(out).toHaveLength(1);
    expect(() => JSON.parse(out[0]!)).toThrow();
    expect(out[0]).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: service ready \{.*"url":"http:\/\/127\.0\.0\.1:8080".*\}\n$/);
    expect(out[0]).not.toContain('p4ss');
    // LOG_FORMAT=json writes the line as it is
    const json: string[] = [];
    new Logger('info', {}, logOutput('json', (line) => json.push(line))).info('service ready');
    expect(JSON.parse(json[0]!)).toMatchObject({ level: 'info', msg: 'service ready' });
  });
});
