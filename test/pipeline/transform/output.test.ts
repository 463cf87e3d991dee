import { acceptOutput, failureMessage, MAX_HEADER_BYTES, oneLine } from '../../../pipeline/deliver/transform/output';

const body = new TextEncoder().encode('{"a":1}');
const accept = (meta: Record<string, unknown>) => acceptOutput({ json: false, chars: 7, ...meta }, body, 1_048_576);
const error = (meta: Record<string, unknown>) => {
  const r = accept(meta);
  return 'error' in r ? r.error : undefined;
};

describe('what a transformation may send', () => {
  it('sends the body as it came, JSON with its content type, headers lowercased', () => {
    const r = accept({ json: true, headers: { 'X-Trace': 'abc', Accept: 'application/json' }, method: 'patch', path: '/a/b?c=d' });
    expect(r).toEqual({ output: { body: Buffer.from('{"a":1}'), content_type: 'application/json', headers: { 'x-trace': 'abc', accept: 'application/json' }, method: 'PATCH', path: '/a/b?c=d' } });
  });

  it('takes the content type from a content-type header, out of the headers', () => {
    expect(accept({ json: true, headers: { 'Content-Type': 'text/csv; charset=utf-8' } })).toEqual({ output: { body: Buffer.from('{"a":1}'), content_type: 'text/csv; charset=utf-8' } });
    expect(error({ headers: { 'content-type': ' ' } })).toBe('header content-type must not be empty');
  });

  it.each([
    ['headers as an array', { headers: ['x-a', '1'] }, 'headers must be an object of header names to string values'],
    ['headers as a string', { headers: 'x-a: 1' }, 'headers must be an object of header names to string values'],
    ['a name with a space', { headers: { 'bad name': '1' } }, 'header name "bad name" is not a valid HTTP header name'],
    ['a name with a colon', { headers: { 'x-a:': '1' } }, 'header name "x-a:" is not a valid HTTP header name'],
    ['an empty name', { headers: { '': '1' } }, 'header name "" is not a valid HTTP header name'],
    ['a number value', { headers: { 'x-a': 1 } }, 'header x-a must be a string'],
    ['an object value', { headers: { 'x-a': { v: 1 } } }, 'header x-a must be a string'],
    ['webhook-id', { headers: { 'webhook-id': 'msg_1' } }, "header webhook-id is the service's own; a transformation cannot set it"],
    ['Webhook-Timestamp', { headers: { 'Webhook-Timestamp': '1' } }, "header Webhook-Timestamp is the service's own; a transformation cannot set it"],
    ['the hop count', { headers: { 'x-hookline-hops': '0' } }, "header x-hookline-hops is the service's own; a transformation cannot set it"],
    ['Content-Length', { headers: { 'Content-Length': '5' } }, 'header Content-Length is set by the HTTP client; a transformation cannot set it'],
    ['host', { headers: { host: 'evil.example' } }, 'header host is set by the HTTP client; a transformation cannot set it'],
    ['transfer-encoding', { headers: { 'transfer-encoding': 'chunked' } }, 'header transfer-encoding is set by the HTTP client; a transformation cannot set it'],
    ['a value with CRLF', { headers: { 'x-a': 'one\r\nx-b: two' } }, 'header x-a must be one line of text (no line breaks or control characters, no character beyond \\u00ff)'],
    ['a value with NUL', { headers: { 'x-a': 'nul\u0000' } }, 'header x-a must be one line of text (no line breaks or control characters, no character beyond \\u00ff)'],
    ['a value beyond Latin-1', { headers: { 'x-a': 'snow ☃' } }, 'header x-a must be one line of text (no line breaks or control characters, no character beyond \\u00ff)'],
    ['a name given twice in two cases', { headers: { 'X-A': '1', 'x-a': '2' } }, 'header x-a is given twice (header names are case-insensitive)'],
    ['33 headers', { headers: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`x-${i}`, 'v'])) }, 'transform returned 33 headers; at most 32'],
    ['headers over 8 KiB', { headers: { 'x-a': 'v'.repeat(MAX_HEADER_BYTES) } }, `headers take more than ${MAX_HEADER_BYTES} bytes`],
    ['method GET', { method: 'GET' }, 'method must be POST, PUT or PATCH, not GET'],
    ['a method that is no string', { method: 7 }, 'method must be POST, PUT or PATCH'],
    ['a relative path', { path: 'a/b' }, 'path must be a string starting with /'],
    ['a path that is no string', { path: 12 }, 'path must be a string starting with /'],
    ['a path starting with //', { path: '//evil.example/a' }, 'path must not start with //'],
    ['a path with a backslash', { path: '/\\evil.example/a' }, 'path must not hold control characters, line breaks or backslashes'],
    ['a path with CRLF', { path: '/a\r\nHost: x' }, 'path must not hold control characters, line breaks or backslashes'],
    ['a path over 2048 characters', { path: `/${'a'.repeat(2048)}` }, 'path must be at most 2048 characters'],
  ])('refuses %s', (_what, meta, message) => {
    expect(error(meta)).toBe(message);
  });

  it('accepts the largest headers allowed, and tab and Latin-1 in values', () => {
    const headers = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`x-${String(i).padStart(2, '0')}`, 'v'.repeat(250)]));
    expect('output' in accept({ headers })).toBe(true);
    expect(accept({ headers: { 'x-a': 'tab\there, café' } })).toMatchObject({ output: { headers: { 'x-a': 'tab\there, café' } } });
  });

  it('keeps a header named __proto__ as an own member', () => {
    const r = accept({ headers: JSON.parse('{"__proto__": "x"}') as unknown });
    const headers = 'output' in r ? r.output.headers : undefined;
    expect(Object.keys(headers ?? {})).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
  });

  it('refuses an envelope it cannot read, and a body over the limit', () => {
    expect(acceptOutput(null, body, 100)).toEqual({ error: 'the result could not be read out of the sandbox' });
    expect(acceptOutput('"polluted"', body, 100)).toEqual({ error: 'the result could not be read out of the sandbox' });
    expect(acceptOutput({ json: false, chars: 7 }, body, 5)).toEqual({ error: 'transform returned 7 bytes; at most 5' });
  });
});

describe('failure messages', () => {
  const limits = { timeoutMs: 50, memoryMb: 16, maxOutputBytes: 1_048_576 };

  it('words each kind for an attempt and for a check', () => {
    expect(failureMessage({ kind: 'timeout' }, limits, 'run')).toBe('transform ran out of time (50 ms)');
    expect(failureMessage({ kind: 'memory' }, limits, 'run')).toBe('transform ran out of memory (16 MiB)');
    expect(failureMessage({ kind: 'threw', detail: 'TypeError: x is not a function', line: 3, column: 9 }, limits, 'run')).toBe('transform threw: TypeError: x is not a function (line 3, column 9)');
    expect(failureMessage({ kind: 'compile', detail: "SyntaxError: expecting ')'", line: 1 }, limits, 'run')).toBe("transformation does not compile: expecting ')' (line 1)");
    expect(failureMessage({ kind: 'compile', detail: "SyntaxError: expecting ')'" }, limits, 'check')).toBe("does not compile: expecting ')'");
    expect(failureMessage({ kind: 'missing' }, limits, 'check')).toBe('defines no function transform(event)');
    expect(failureMessage({ kind: 'timeout' }, limits, 'check')).toBe('runs out of time (50 ms) when loaded');
    expect(failureMessage({ kind: 'busy' }, limits, 'run')).toBe('too many transformations waiting for this tenant');
  });

  it('puts any detail on one line of at most 500 characters', () => {
    expect(oneLine('a\r\nb\u2028c\u0000d\t e')).toBe('a b c d e');
    expect(oneLine('x'.repeat(600))).toBe(`${'x'.repeat(499)}…`);
    expect(failureMessage({ kind: 'threw', detail: `${'y'.repeat(1000)}\n` }, limits, 'run')).toHaveLength('transform threw: '.length + 500);
  });
});
