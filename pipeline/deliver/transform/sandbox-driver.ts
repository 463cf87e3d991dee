import type { FailureKind } from './output';

/**
 * Largest envelope (the headers, method and path, as JSON) a run may hand out besides its body:
 * far beyond what the checks after it accept, small enough to copy out whatever it holds.
 */
export const MAX_ENVELOPE_CHARS = 65_536;

/**
 * What the driver's number answers mean: `checked` and `drop` as such, the rest a failure the
 * worker reports as it is. The answers that carry a value are arrays: `[thrown, 1]` (transform
 * threw it), `[length, 6]` (a body of that many characters), `[thrown, 7]` (reading or
 * serialising the result threw it), `[envelope, body]` (what to send).
 */
export const DRIVER_ANSWERS: Record<number, 'checked' | 'drop' | { kind: FailureKind; detail?: string }> = {
  0: { kind: 'missing' },
  1: 'checked',
  2: 'drop',
  3: { kind: 'output', detail: 'transform returned undefined; return null to drop the delivery' },
  4: { kind: 'output', detail: 'transform must return null or an object with a body member' },
  5: { kind: 'output', detail: 'transform returned a body JSON cannot hold (a function, a symbol or undefined)' },
  8: { kind: 'output', detail: `transform returned headers, method and path taking more than ${MAX_ENVELOPE_CHARS} characters` },
  9: { kind: 'output', detail: 'transform returned a Promise; it must return its result itself (nothing asynchronous runs here)' },
};

/**
 * The JavaScript evaluated in each fresh QuickJS context before the tenant's code. It evaluates
 * to one function that no global names, which the worker calls: it parses the event, calls
 * `transform`, and turns what it returned into two strings made inside the sandbox, the body
 * and an envelope (JSON of the headers, method and path): the tenant's getters, proxies and
 * `toJSON` all run there, under the sandbox's limits, and the worker copies out strings only,
 * each measured against its bound first. It checks nothing else: whatever the tenant's code did
 * to the globals it uses can only spoil the tenant's own result, which the host checks as
 * untrusted input (output.ts).
 *
 * Kept this short on purpose: QuickJS compiles it for every run, at roughly 70 ns a character.
 * Failures are described by DESCRIBE_SOURCE, compiled only when a run fails.
 */
export function driverSource(maxBodyChars: number): string {
  return `(function (parse, stringify, maxBody, maxEnvelope) {
  return function (op, input) {
    if (typeof transform !== 'function') return 0;
    if (op === 'check') return 1;
    var result, body, text, envelope;
    try { result = transform(parse(input)); } catch (thrown) { return [thrown, 1]; }
    if (result === null) return 2;
    if (result === undefined) return 3;
    if (typeof result !== 'object' && typeof result !== 'function') return 4;
    try {
      if (typeof result.then === 'function') return 9;
      body = result.body;
      if (body === undefined) return 4;
      text = typeof body === 'string' ? body : stringify(body);
      if (typeof text !== 'string') return 5;
      if (text.length > maxBody) return [text.length, 6];
      if (typeof text.toWellFormed === 'function') text = text.toWellFormed();
      if (typeof text !== 'string' || text.length > maxBody) return 5;
      envelope = stringify({ json: typeof body !== 'string', chars: text.length, headers: result.headers, method: result.method, path: result.path });
    } catch (thrown) { return [thrown, 7]; }
    return typeof envelope !== 'string' || envelope.length > maxEnvelope ? 8 : [envelope, text];
  };
})(JSON.parse, JSON.stringify, ${maxBodyChars}, ${MAX_ENVELOPE_CHARS})`;
}

/**
 * A function, evaluated in the run's context when it failed, that describes a thrown value as
 * JSON `{kind, detail, line?, column?, syntax?}` (or null, when the tenant's code broke it): kind memory or stack for the engine's own
 * limits, else threw; detail `Name: message` for an Error, the message or JSON or text of
 * anything else, at most 1000 characters; the line and column of the tenant's code it came from.
 * Its getters and toString run in the sandbox, still under the run's limits.
 */
export const DESCRIBE_SOURCE = String.raw`(function (e) {
  var d = { kind: 'threw', detail: 'a value that cannot be turned into text' };
  try {
    if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
      var name = e.name, message = e.message;
      if (name === 'InternalError' && message === 'out of memory') d.kind = 'memory';
      else if (name === 'InternalError' && message === 'stack overflow') d.kind = 'stack';
      if (e instanceof Error) {
        if (name === 'SyntaxError') d.syntax = true;
        d.detail = (typeof name === 'string' && name !== '' ? name + ': ' : '') + (message === undefined ? '' : String(message));
        var at = typeof e.stack === 'string' ? /transformation\.js:(\d+)(?::(\d+))?/.exec(e.stack) : null;
        if (at !== null) { d.line = +at[1]; if (at[2] !== undefined) d.column = +at[2]; }
      } else if (typeof message === 'string') {
        d.detail = message;
      } else {
        var json = JSON.stringify(e);
        d.detail = typeof json === 'string' ? json : String(e);
      }
    } else {
      d.detail = String(e);
    }
    d.detail = String(d.detail).slice(0, 1000);
  } catch (inner) {
    // its own getters or toString threw: what was learnt so far stands
  }
  // the tenant's code may have replaced slice or JSON: only typeof and length are its own
  if (typeof d.detail !== 'string' || d.detail.length > 1000) d.detail = 'a value whose description cannot be shown';
  var out = JSON.stringify(d);
  return typeof out === 'string' && out.length <= 4096 ? out : null;
})`;
