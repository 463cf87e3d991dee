import http from 'node:http';

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
