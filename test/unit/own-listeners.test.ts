import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { parseAllowList } from '../../core/address-policy';
import { ownListeners } from '../../core/own-listeners';
import { refusalOfDestination } from '../../platform/http/destination-check';
import { createGuardedAgent, ssrfRefusalOf } from '../../platform/http/guarded-agent';
import type { Resolve } from '../../platform/http/guarded-lookup';

const PORT = 48080;
const loopback = parseAllowList('loopback').allow;
const none = parseAllowList('none').allow;
const toLoopback: Resolve = async () => [{ address: '127.0.0.1', family: 4 }];
const toPublic: Resolve = async () => [{ address: '93.184.215.14', family: 4 }];
const LOOP = /this service's own endpoint/;

// every spelling of the local host that WHATWG URL and the resolver let through
const LOOPBACK_SPELLINGS = [
  'localhost', 'LOCALHOST', 'localhost.', 'api.localhost', '127.0.0.1', '127.1', '127.0.0.1.', '2130706433', '0x7f000001', '0x7f.1',
  '0177.0.0.1', '017700000001', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:7f00:1]',
  '[::127.0.0.1]', '0.0.0.0', '[::]', '%31%32%37.0.0.1',
];

describe('a destination pointing at the service itself', () => {
  const bound = ownListeners({ bindHost: '127.0.0.1', port: PORT, publicBaseUrl: `http://127.0.0.1:${PORT}` });
  const check = (url: string, resolve: Resolve = toLoopback, own = bound) => refusalOfDestination(url, { allow: loopback, own, resolve });

  it.each(LOOPBACK_SPELLINGS)('is refused when spelt %s, even with loopback allowed', async (host) => {
    expect(await check(`http://${host}:${PORT}/hooks`)).toMatch(LOOP);
  });

  it('is told apart from another port on loopback, which loopback allows', async () => {
    for (const host of ['127.0.0.1', 'localhost', '[::1]']) expect(await check(`http://${host}:${PORT + 1}/hooks`)).toBeNull();
  });

  it('covers the default port of the scheme', async () => {
    const on80 = ownListeners({ bindHost: '127.0.0.1', port: 80 });
    expect(await check('http://127.0.0.1/x', toLoopback, on80)).toMatch(LOOP);
    expect(await check('http://127.0.0.1:80/x', toLoopback, on80)).toMatch(LOOP);
    expect(await check('https://127.0.0.1/x', toLoopback, on80)).toBeNull();
  });

  it('covers every loopback and interface address when bound to all interfaces', async () => {
    const all = ownListeners({ bindHost: '0.0.0.0', port: PORT, interfaceAddresses: ['127.0.0.1', '10.1.2.3', 'fe80::1'] });
    expect(await check(`http://127.0.0.2:${PORT}/`, toLoopback, all)).toMatch(LOOP);
    expect(await check(`http://[::1]:${PORT}/`, toLoopback, all)).toMatch(LOOP);
    // an interface address is refused as the service, before the allow list would be consulted
    expect(await refusalOfDestination(`http://10.1.2.3:${PORT}/`, { allow: parseAllowList('private').allow, own: all })).toMatch(LOOP);
    // bound to one public interface only, loopback on that port is someone else
    const one = ownListeners({ bindHost: '10.1.2.3', port: PORT });
    expect(await check(`http://127.0.0.2:${PORT}/`, toLoopback, one)).toBeNull();
    expect(await check(`http://0.0.0.0:${PORT}/`, toLoopback, one)).toMatch(LOOP);
  });

  it('covers the public base URL by name and by what it resolves to', async () => {
    const own = ownListeners({ bindHost: '127.0.0.1', port: PORT, publicBaseUrl: 'https://hooks.example.com', publicAddresses: ['93.184.215.14'] });
    expect(await check('https://hooks.example.com/h/x', toPublic, own)).toMatch(LOOP);
    expect(await check('https://HOOKS.example.com./h/x', toPublic, own)).toMatch(LOOP);
    expect(await check('https://hooks.example.com:443/h/x', toPublic, own)).toMatch(LOOP);
    expect(await check('https://alias.example.net/h/x', toPublic, own)).toMatch(LOOP);
    expect(await check('https://93.184.215.14/h/x', toPublic, own)).toMatch(LOOP);
    expect(await check('https://hooks.example.com:8443/h/x', toPublic, own)).toBeNull();
  });

  it('covers a name that resolves to loopback', async () => {
    expect(await check(`http://sneaky.example:${PORT}/`, toLoopback)).toMatch(LOOP);
  });
});

describe('destination refusals at create time', () => {
  const own = ownListeners({ bindHost: '127.0.0.1', port: PORT });

  it('refuses non-public addresses by default without echoing what a name resolved to', async () => {
    expect(await refusalOfDestination('http://10.0.0.1/x', { allow: none, own })).toMatch(/private address/);
    expect(await refusalOfDestination('http://127.0.0.1:9/x', { allow: none, own })).toMatch(/loopback address/);
    const answer = await refusalOfDestination('http://inside.example/x', { allow: none, own, resolve: async () => [{ address: '10.9.8.7', family: 4 }] });
    expect(answer).toMatch(/inside\.example resolves to a private address/);
    expect(answer).not.toMatch(/10\.9\.8\.7/);
  });

  it('accepts a name that does not resolve now, and a public one', async () => {
    const missing: Resolve = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example'), { code: 'ENOTFOUND' }));
    expect(await refusalOfDestination('http://nowhere.example/x', { allow: none, own, resolve: missing })).toBeNull();
    expect(await refusalOfDestination('http://nowhere.example/x', { allow: none, own, resolve: async () => [] })).toBeNull();
    expect(await refusalOfDestination('https://hooks.example/x', { allow: none, own, resolve: toPublic })).toBeNull();
  });

  it('waits for a slow resolver no longer than its bound, then accepts', async () => {
    const never: Resolve = () => new Promise(() => undefined);
    const started = performance.now();
    expect(await refusalOfDestination('http://slow.example/x', { allow: none, own, resolve: never, resolveTimeoutMs: 200 })).toBeNull();
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(190);
    expect(waited).toBeLessThan(2_000);
    // an answer inside the bound is still checked: a refused address is refused
    const slowPrivate: Resolve = () => new Promise((resolve) => setTimeout(() => resolve([{ address: '10.1.2.3', family: 4 }]), 50));
    expect(await refusalOfDestination('http://slow.example/x', { allow: none, own, resolve: slowPrivate, resolveTimeoutMs: 1_000 })).toMatch(/resolves to a private address/);
  });
});

describe('the delivery agent', () => {
  let server: http.Server;
  let port = 0;
  let received = 0;

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      received += 1;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function send(url: string, resolve: Resolve): Promise<unknown> {
    const agent = createGuardedAgent({ allow: loopback, connectTimeoutMs: 5_000, totalTimeoutMs: 10_000, resolve, own: ownListeners({ bindHost: '127.0.0.1', port }) });
    try {
      const res = await request(url, { method: 'POST', body: 'x', dispatcher: agent });
      await res.body.dump();
      return res.statusCode;
    } catch (err) {
      return err;
    } finally {
      await agent.close();
    }
  }

  it('refuses at connect a name whose DNS later points at the service, without sending anything', async () => {
    const err = await send(`http://later.example:${port}/`, toLoopback);
    expect(ssrfRefusalOf(err)).toMatchObject({ addressClass: 'own-listener', host: 'later.example' });
    expect(ssrfRefusalOf(err)?.message).not.toMatch(/127\.0\.0\.1/);
    for (const host of ['127.1', '[::ffff:127.0.0.1]', 'localhost']) expect(ssrfRefusalOf(await send(`http://${host}:${port}/`, toLoopback))).not.toBeNull();
    expect(received).toBe(0);
  });

  it('still reaches another loopback listener (the check is about the service, not loopback)', async () => {
    const other = ownListeners({ bindHost: '127.0.0.1', port: port + 1 });
    const agent = createGuardedAgent({ allow: loopback, connectTimeoutMs: 5_000, totalTimeoutMs: 10_000, own: other });
    const res = await request(`http://127.0.0.1:${port}/`, { method: 'POST', body: 'x', dispatcher: agent });
    await res.body.dump();
    await agent.close();
    expect(res.statusCode).toBe(200);
    expect(received).toBe(1);
  });
});
