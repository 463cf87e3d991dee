import http from 'node:http';
import net from 'node:net';

/** One answer as the socket saw it; `body` is parsed JSON when it parses, else the text. */
export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

export interface RawRequest {
  method: string;
  /** The request target exactly as it goes on the request line (nothing is encoded here). */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

/**
 * A request through node:http with nothing normalised: any method token, any request target,
 * headers exactly as given (no content-type added), the body as given. Only loopback: `base`
 * must be an http://127.0.0.1 or http://localhost URL, so generated requests cannot leave the
 * machine.
 */
export function rawRequest(base: string, req: RawRequest, timeoutMs = 15_000): Promise<RawAnswer> {
  const u = new URL(base);
  if (u.protocol !== 'http:' || !['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname)) {
    throw new Error(`raw requests go to the loopback test service only, not ${base}`);
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (err: Error | undefined, answer?: RawAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(answer!);
    };
    const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8');
    const headers: Record<string, string> = { ...(req.headers ?? {}) };
    const named = (name: string) => Object.keys(headers).some((h) => h.toLowerCase() === name);
    if (body !== undefined && !named('content-length') && !named('transfer-encoding')) headers['content-length'] = String(body.length);
    const r = http.request(
      { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port, method: req.method, path: req.path, headers, agent: false, setHost: true },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => done(e));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            /* not JSON */
          }
          done(undefined, { status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
        });
      },
    );
    const timer = setTimeout(() => {
      r.destroy();
      done(new Error(`${req.method} ${req.path.slice(0, 200)}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    // the server may answer (401, 413) before reading a large body and close: the answer counts
    r.on('error', (e) => setTimeout(() => done(e), 50));
    if (body !== undefined) r.end(body);
    else r.end();
  });
}

/**
 * Bytes written to a socket as they are, for requests node:http will not send: invalid UTF-8 in
 * the request target, malformed request lines and headers, oversized or very many headers. The
 * request should ask for `Connection: close`; the answer is read until the server closes (or
 * until its Content-Length is complete). Loopback only, as `rawRequest`.
 */
export function socketRequest(base: string, bytes: Buffer, timeoutMs = 15_000): Promise<RawAnswer> {
  const u = new URL(base);
  if (u.protocol !== 'http:' || !['127.0.0.1', 'localhost'].includes(u.hostname)) {
    throw new Error(`raw requests go to the loopback test service only, not ${base}`);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    const finish = (err?: Error) => {
      if (settled) return;
      const answer = parseAnswer(Buffer.concat(chunks));
      if (!answer && !err && !socket.destroyed) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (answer) resolve(answer);
      else reject(err ?? new Error('the connection closed without an answer'));
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const answer = parseAnswer(Buffer.concat(chunks), true);
      if (answer) finish();
    });
    socket.on('end', () => finish(new Error('the connection closed without an answer')));
    socket.on('close', () => finish(new Error('the connection closed without an answer')));
    // the server may answer and close before it has read everything written: the answer counts
    socket.on('error', (e) => setTimeout(() => finish(e), 50));
    socket.write(bytes);
  });
}

/** An HTTP/1.1 answer from its bytes; with `complete`, only once its body is all there. */
function parseAnswer(buf: Buffer, complete = false): RawAnswer | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (!m) return undefined;
  const headers: http.IncomingHttpHeaders = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = buf.subarray(end + 4);
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (body.length < length) {
      if (complete) return undefined;
    } else body = body.subarray(0, length);
  } else if (String(headers['transfer-encoding'] ?? '').toLowerCase() === 'chunked') {
    const decoded = dechunk(body);
    if (!decoded) {
      if (complete) return undefined;
    } else body = decoded;
  } else if (complete) return undefined;
  const text = body.toString('utf8');
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: Number(m[1]), headers, text, body: parsed };
}

/** A chunked body decoded, or undefined while its last chunk has not arrived. */
function dechunk(buf: Buffer): Buffer | undefined {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return Buffer.concat(out);
    if (buf.length < eol + 2 + size + 2) return undefined;
    out.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}
