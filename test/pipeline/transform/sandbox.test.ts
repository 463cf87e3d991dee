import { createSandboxTransformer, MAX_TRANSFORMATION_BYTES, type SandboxTransformer } from '../../../pipeline/deliver/transform/sandbox';
import type { TransformInput, TransformOutput, TransformResult } from '../../../pipeline/deliver/transform/transformer';

const event = (body: unknown, contentType: string | null = 'application/json'): TransformInput => ({
  id: 'evt_1',
  delivery_id: 'dlv_1',
  destination_id: 'dst_1',
  attempt: 2,
  content_type: contentType,
  body,
  received_at: '2026-01-02T03:04:05.000Z',
});

function sent(r: TransformResult): TransformOutput & { text: string } {
  if (!r.ok) throw new Error(`expected an output, the run failed: ${r.error}`);
  if (r.output === null) throw new Error('expected an output, the run dropped the delivery');
  return { ...r.output, text: r.output.body.toString('utf8') };
}

function failure(r: TransformResult): string {
  if (r.ok) throw new Error(`expected a failure, got ${JSON.stringify(r.output && { ...r.output, body: r.output.body.toString() })}`);
  expect(r.error).not.toMatch(/[\r\n]/);
  return r.error;
}

/** The same worker runs everything below (one worker): each hostile run is followed by this one. */
const RESHAPE = 'function transform(e) { return { body: { id: e.id, attempt: e.attempt, total: e.body.items.reduce((a, i) => a + i.price, 0) } } }';
async function stillWorks(t: SandboxTransformer): Promise<void> {
  const r = await t.run(RESHAPE, event({ items: [{ price: 2 }, { price: 3 }] }), 'ten_next');
  expect(sent(r)).toMatchObject({ text: '{"id":"evt_1","attempt":2,"total":5}', content_type: 'application/json' });
}

describe('transformation sandbox', () => {
  let t: SandboxTransformer;
  beforeAll(() => {
    t = createSandboxTransformer({ workers: 1 });
  });
  afterAll(() => t.close());

  describe('what transform returns', () => {
    it('reshapes a JSON body, sent as JSON', async () => {
      const out = sent(await t.run(RESHAPE, event({ items: [{ price: 1 }, { price: 4 }] }), 'ten_a'));
      expect(out.text).toBe('{"id":"evt_1","attempt":2,"total":5}');
      expect(out.content_type).toBe('application/json');
      expect(out.headers).toBeUndefined();
      expect(out.method).toBeUndefined();
      expect(out.path).toBeUndefined();
    });

    it('is given the event as a plain copy, and a const arrow function counts as transform', async () => {
      const out = sent(await t.run('const transform = (event) => ({ body: JSON.stringify(event) })', event('plain text', 'text/plain'), 'ten_a'));
      expect(JSON.parse(out.text)).toEqual(event('plain text', 'text/plain'));
    });

    it('sends a string body as UTF-8 with the content type unchanged', async () => {
      const out = sent(await t.run('function transform(e) { return { body: "héllo " + e.body } }', event('wörld', 'text/plain'), 'ten_a'));
      expect(out.body).toEqual(Buffer.from('héllo wörld', 'utf8'));
      expect(out.content_type).toBeUndefined();
    });

    it('sends any JSON value (a number, null, an array) as JSON', async () => {
      for (const [value, text] of [['42', '42'], ['null', 'null'], ['[1, "a"]', '[1,"a"]'], ['false', 'false']] as const) {
        const out = sent(await t.run(`function transform() { return { body: ${value} } }`, event({}), 'ten_a'));
        expect(out).toMatchObject({ text, content_type: 'application/json' });
      }
    });

    it('drops the delivery on null', async () => {
      const r = await t.run('function transform(e) { return e.body.skip ? null : { body: e.body } }', event({ skip: true }), 'ten_a');
      expect(r).toMatchObject({ ok: true, output: null });
    });

    it('adds headers (names lowercased), sets the method and the path', async () => {
      const code = 'function transform(e) { return { body: "x", headers: { "X-Source": "hookline", "Authorization": "Bearer " + e.id }, method: "put", path: "/v2/items/" + e.id + "?full=1" } }';
      const out = sent(await t.run(code, event({}), 'ten_a'));
      expect(out.headers).toEqual({ 'x-source': 'hookline', authorization: 'Bearer evt_1' });
      expect(out.method).toBe('PUT');
      expect(out.path).toBe('/v2/items/evt_1?full=1');
    });

    it('takes the content type from a content-type header, for a string or a JSON body', async () => {
      const xml = sent(await t.run('function transform() { return { body: "<a/>", headers: { "Content-Type": "application/xml" } } }', event({}), 'ten_a'));
      expect(xml).toMatchObject({ text: '<a/>', content_type: 'application/xml' });
      expect(xml.headers).toBeUndefined();
      const vendor = sent(await t.run('function transform() { return { body: {a: 1}, headers: { "content-type": "application/vnd.acme+json", "x-a": "1" } } }', event({}), 'ten_a'));
      expect(vendor).toMatchObject({ text: '{"a":1}', content_type: 'application/vnd.acme+json', headers: { 'x-a': '1' } });
    });

    it('treats null headers, method and path as none', async () => {
      const out = sent(await t.run('function transform() { return { body: "x", headers: null, method: null, path: null } }', event({}), 'ten_a'));
      expect(out).toEqual({ body: Buffer.from('x'), text: 'x' });
    });

    it.each([
      ['undefined', 'function transform() {}', 'transform returned undefined; return null to drop the delivery'],
      ['a number', 'function transform() { return 5 }', 'transform must return null or an object with a body member'],
      ['a string', 'function transform() { return "body" }', 'transform must return null or an object with a body member'],
      ['an object without body', 'function transform(e) { return { data: e.body } }', 'transform must return null or an object with a body member'],
      ['a Promise', 'async function transform(e) { return { body: 1 } }', 'transform returned a Promise; it must return its result itself (nothing asynchronous runs here)'],
      ['a function as body', 'function transform() { return { body: function () {} } }', 'transform returned a body JSON cannot hold (a function, a symbol or undefined)'],
      ['a circular body', 'function transform() { const a = {}; a.a = a; return { body: a } }', 'the result cannot be read or turned into JSON: TypeError: circular reference'],
      ['a method other than POST, PUT, PATCH', 'function transform() { return { body: "", method: "DELETE" } }', 'method must be POST, PUT or PATCH, not DELETE'],
      ['a relative path', 'function transform() { return { body: "", path: "items" } }', 'path must be a string starting with /'],
      ['a path to another host', 'function transform() { return { body: "", path: "//evil.example/x" } }', 'path must not start with //'],
      ['a header the service sets', 'function transform() { return { body: "", headers: { "Webhook-Signature": "v1,x" } } }', "header Webhook-Signature is the service's own; a transformation cannot set it"],
      ['a hop-count header', 'function transform() { return { body: "", headers: { "X-Hookline-Hops": "0" } } }', "header X-Hookline-Hops is the service's own; a transformation cannot set it"],
      ['a header with a line break', 'function transform() { return { body: "", headers: { "x-a": "1\\r\\nx-b: 2" } } }', 'header x-a must be one line of text (no line breaks or control characters, no character beyond \\u00ff)'],
      ['a header that is not a string', 'function transform() { return { body: "", headers: { "x-n": 1 } } }', 'header x-n must be a string'],
      ['33 headers', 'function transform() { const h = {}; for (let i = 0; i < 33; i++) h["x-" + i] = "v"; return { body: "", headers: h } }', 'transform returned 33 headers; at most 32'],
    ])('fails the attempt when transform returns %s', async (_what, code, error) => {
      expect(failure(await t.run(code, event({}), 'ten_a'))).toBe(error);
    });

    it('reports a syntax error as not compiling, with its place', async () => {
      expect(failure(await t.run('function transform(e) {\n  return { body: }\n}', event({}), 'ten_a'))).toMatch(/^transformation does not compile: .+ \(line 2, column \d+\)$/);
      expect(failure(await t.run('function transfrom(e) { return null }', event({}), 'ten_a'))).toBe('transformation defines no function transform(event)');
      await stillWorks(t);
    });

    it('gives the CPU time spent', async () => {
      const r = await t.run(RESHAPE, event({ items: [] }), 'ten_a');
      expect(r.cpuMs).toBeGreaterThan(0);
      expect(r.cpuMs).toBeLessThan(1000);
    });
  });

  describe('thrown values', () => {
    it.each([
      ['an Error, with the line it came from', 'function transform(e) {\n  return { body: e.body.missing.field }\n}', /^transform threw: TypeError: cannot read property 'field' of undefined \(line 2, column \d+\)$/],
      ['an object', 'function transform() { throw { a: 1 } }', /^transform threw: \{"a":1\}$/],
      ['an object with a message', 'function transform() { throw { message: "no customer" } }', /^transform threw: no customer$/],
      ['null', 'function transform() { throw null }', /^transform threw: null$/],
      ['a string over lines', 'function transform() { throw "first line\\nsecond line" }', /^transform threw: first line second line$/],
      ['a long message, cut to 500 characters', 'function transform() { throw new Error("x".repeat(5000)) }', /^transform threw: Error: x{492}… \(line 1, column \d+\)$/],
      ['an object whose toString throws', 'function transform() { throw { toString() { throw 1 }, toJSON() { throw 2 } } }', /^transform threw: a value that cannot be turned into text$/],
    ])('reports %s on one line', async (_what, code, error) => {
      expect(failure(await t.run(code, event({}), 'ten_a'))).toMatch(error);
      await stillWorks(t);
    });
  });

  describe('hostile code fails only its own attempt', () => {
    it('an endless loop runs out of time', async () => {
      const r = await t.run('function transform() { for (;;) {} }', event({}), 'ten_evil');
      expect(failure(r)).toBe('transform ran out of time (50 ms)');
      expect(r.cpuMs).toBeGreaterThanOrEqual(40);
      await stillWorks(t);
    });

    it('an endless loop at the top level, or in a catch, runs out of time', async () => {
      expect(failure(await t.run('for (;;) {} function transform() { return null }', event({}), 'ten_evil'))).toBe('transform ran out of time (50 ms)');
      expect(failure(await t.run('function transform() { for (;;) { try { for (;;) {} } catch (e) {} } }', event({}), 'ten_evil'))).toBe('transform ran out of time (50 ms)');
      await stillWorks(t);
    });

    it('a catastrophic regular expression runs out of time', async () => {
      expect(failure(await t.run('function transform() { return { body: /(a+)+$/.test("a".repeat(40) + "b") } }', event({}), 'ten_evil'))).toBe('transform ran out of time (50 ms)');
      await stillWorks(t);
    });

    it.each([
      ['objects', 'function transform() { const a = []; for (;;) a.push({ n: Math.random(), list: [1, 2, 3] }) }'],
      ['typed arrays (beyond the engine\'s own count)', 'function transform() { const a = []; for (;;) a.push(new Uint8Array(1 << 20)) }'],
      ['strings', 'function transform() { const a = []; for (;;) a.push("x".repeat(100000) + Math.random()) }'],
      ['one huge allocation', 'function transform() { return { body: "x".repeat(1 << 29) } }'],
      ['objects kept in a global, the error caught', 'globalThis.keep = []; function transform() { try { for (;;) keep.push([Math.random()]) } catch (e) { return { body: String(e) } } }'],
    ])('a memory bomb of %s runs out of memory', async (_what, code) => {
      const r = await t.run(code, event({}), 'ten_evil');
      // a bomb slow enough may reach the time limit first; either stops it
      expect(failure(r)).toMatch(/^transform ran out of (memory \(16 MiB\)|time \(50 ms\))$/);
      await stillWorks(t);
    });

    it('a quick memory bomb is reported as such', async () => {
      expect(failure(await t.run('function transform() { const a = []; for (;;) a.push(new Uint8Array(1 << 20)) }', event({}), 'ten_evil'))).toBe('transform ran out of memory (16 MiB)');
    });

    it('deep recursion runs out of stack', async () => {
      expect(failure(await t.run('function down(n) { return down(n + 1) + 1 } function transform() { return { body: down(0) } }', event({}), 'ten_evil'))).toBe('transform ran out of stack: recursion or nesting too deep');
      await stillWorks(t);
    });

    it('a body nested too deep to serialise runs out of stack', async () => {
      const code = 'function transform() { let o = []; for (let i = 0; i < 100000; i++) o = [o]; return { body: o } }';
      // about 0.7 s of CPU in one native call that the time limit cannot stop: on a machine short
      // of cores the watchdog (1.5 s of wall-clock time) may stop it first
      expect(failure(await t.run(code, event({}), 'ten_evil'))).toMatch(/^transform ran out of (stack: recursion or nesting too deep|time \(50 ms\))$/);
      await stillWorks(t);
    });

    it('a huge body is refused before it leaves the sandbox, counted in bytes', async () => {
      expect(failure(await t.run('function transform() { return { body: "x".repeat(2000000) } }', event({}), 'ten_evil'))).toBe('transform returned at least 2000000 bytes; at most 1048576');
      // fewer characters than the limit, more bytes: measured exactly once out
      expect(failure(await t.run('function transform() { return { body: "é".repeat(600000) } }', event({}), 'ten_evil'))).toBe('transform returned 1200000 bytes; at most 1048576');
      expect(failure(await t.run('function transform() { return { body: "x", headers: { "x-big": "v".repeat(100000) } } }', event({}), 'ten_evil'))).toBe('transform returned headers, method and path taking more than 65536 characters');
      await stillWorks(t);
    });

    it('a 900 KiB JSON event goes in and out at the default limits', async () => {
      const items = Array.from({ length: 9200 }, (_, i) => ({ id: i, name: `item ${i}`, note: 'n'.repeat(60) }));
      const out = sent(await t.run('function transform(e) { return { body: e.body } }', event({ items }), 'ten_a'));
      expect(out.body.length).toBeGreaterThan(900 * 1024);
      expect(JSON.parse(out.text)).toEqual({ items });
    });

    it('an event nested deeper than can be copied fails that attempt only', async () => {
      let deep: unknown = [];
      for (let i = 0; i < 100_000; i++) deep = [deep];
      const r = await t.run('function transform(e) { return null }', event(deep), 'ten_evil');
      expect(failure(r)).toMatch(/nested too deeply|ran out of stack/);
      await stillWorks(t);
    });
  });

  describe('nothing reaches out of the sandbox', () => {
    it('has no I/O: no fetch, require, process, timers, std or os, and the global reached through constructors is the sandbox\'s', async () => {
      const code = `function transform() {
        const g = ({}).constructor.constructor('return this')();
        const names = ['fetch', 'require', 'process', 'setTimeout', 'setInterval', 'std', 'os', 'XMLHttpRequest', 'WebAssembly', 'Deno', 'Bun', 'module'];
        return { body: { same: g === globalThis, found: names.filter((n) => typeof g[n] !== 'undefined') } };
      }`;
      expect(JSON.parse(sent(await t.run(code, event({}), 'ten_evil')).text)).toEqual({ same: true, found: [] });
    });

    it('runs getters, proxies and toJSON of the result inside the sandbox, and hands out plain data', async () => {
      const code = `function transform() {
        let reads = 0;
        const headers = new Proxy({}, { ownKeys: () => ['x-read'], getOwnPropertyDescriptor: () => ({ value: 'v', enumerable: true, configurable: true }), get: () => 'reads ' + (++reads) });
        return { get body() { return { toJSON() { return { made: 'inside' } } } }, headers, get method() { return 'patch' } };
      }`;
      const out = sent(await t.run(code, event({}), 'ten_evil'));
      // JSON.stringify asked the proxy for toJSON first: a read as well
      expect(out).toMatchObject({ text: '{"made":"inside"}', method: 'PATCH', headers: { 'x-read': 'reads 2' } });
      expect(Object.getPrototypeOf(out.headers)).toBe(Object.prototype);
    });

    it('keeps a header named __proto__ a header, never a prototype', async () => {
      const out = sent(await t.run('function transform() { return { body: "", headers: JSON.parse(\'{"__proto__": "x"}\') } }', event({}), 'ten_evil'));
      expect(Object.keys(out.headers ?? {})).toEqual(['__proto__']);
      expect(Object.getPrototypeOf(out.headers)).toBe(Object.prototype);
    });

    it('leaves nothing for the next run: globals, polluted prototypes, replaced built-ins', async () => {
      const polluter = `
        globalThis.leaked = 'from the last run';
        Object.prototype.polluted = true;
        Array.prototype.map = function () { return ['hijacked'] };
        JSON.parse = function () { return { hijacked: true } };
        function transform() { return { body: 'first' } }`;
      expect(sent(await t.run(polluter, event({}), 'ten_evil')).text).toBe('first');
      const probe = `function transform(e) { return { body: { leaked: typeof leaked, polluted: ({}).polluted === true, map: [1, 2].map((x) => x * 2), body: e.body } } }`;
      for (const tenant of ['ten_evil', 'ten_other']) {
        expect(JSON.parse(sent(await t.run(probe, event({ fine: 1 }), tenant)).text)).toEqual({ leaked: 'undefined', polluted: false, map: [2, 4], body: { fine: 1 } });
      }
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it('a run that pollutes its own Object.prototype only spoils its own result', async () => {
      const r = await t.run('Object.prototype.toJSON = function () { return "polluted" }; function transform() { return { body: { a: 1 } } }', event({}), 'ten_evil');
      expect(r.ok).toBe(false);
      await stillWorks(t);
    });
  });

  describe('check', () => {
    it('accepts code that defines transform, and says why other code cannot be used', async () => {
      await expect(t.check(RESHAPE)).resolves.toBeUndefined();
      await expect(t.check('const transform = (e) => null')).resolves.toBeUndefined();
      await expect(t.check('function transform(e) { return { body: }')).resolves.toMatch(/^does not compile: .+ \(line 1, column \d+\)$/);
      await expect(t.check('function handler(e) { return null }')).resolves.toBe('defines no function transform(event)');
      await expect(t.check('var transform = 5')).resolves.toBe('defines no function transform(event)');
      await expect(t.check('throw new Error("no")')).resolves.toMatch(/^throws when loaded: Error: no/);
      await expect(t.check('for (;;) {} function transform() {}')).resolves.toBe('runs out of time (50 ms) when loaded');
    });

    it('refuses code over the size limit before compiling it', async () => {
      const big = `function transform(e) { return null } /* ${'x'.repeat(MAX_TRANSFORMATION_BYTES)} */`;
      await expect(t.check(big)).resolves.toBe(`must be at most ${MAX_TRANSFORMATION_BYTES} bytes`);
      expect(failure(await t.run(big, event({}), 'ten_a'))).toBe(`the transformation is larger than ${MAX_TRANSFORMATION_BYTES} bytes`);
    });
  });

  it('counts runs and failures by kind', () => {
    const s = t.stats();
    expect(s.runs).toBeGreaterThan(40);
    expect(s.sent).toBeGreaterThan(10);
    expect(s.dropped).toBeGreaterThanOrEqual(1);
    expect(s.failures.timeout).toBeGreaterThanOrEqual(4);
    expect(s.failures.memory).toBeGreaterThanOrEqual(1);
    expect(s.failures.stack).toBeGreaterThanOrEqual(1);
    expect(s.failures.threw).toBeGreaterThanOrEqual(7);
    expect(s.failures.output).toBeGreaterThanOrEqual(10);
    expect(s.failures.compile).toBeGreaterThanOrEqual(2);
    expect(s).toMatchObject({ waiting: 0, running: 0 });
    expect(s.checks).toBeGreaterThanOrEqual(7);
  });
});
