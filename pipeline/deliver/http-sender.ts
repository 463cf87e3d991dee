import { request, type Dispatcher } from 'undici';

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface SendResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  durationMs: number;
}

/** The one port the delivery stage sends through. */
export interface HttpSender {
  send(req: SendRequest): Promise<SendResult>;
  close(): Promise<void>;
}

/**
 * undici through the given agent (the SSRF-guarded one in the service), with a total timeout
 * per attempt; the response body is drained, not kept.
 */
export function undiciSender(agent: Dispatcher, options: { totalTimeoutMs: number }): HttpSender {
  return {
    async send(req) {
      const started = performance.now();
      // a timer cleared when the attempt ends: AbortSignal.timeout's would fire (and build an
      // exception) for every attempt, long after most of them were answered
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), options.totalTimeoutMs);
      try {
        const res = await request(req.url, {
          method: 'POST',
          headers: req.headers,
          body: req.body,
          dispatcher: agent,
          maxRedirections: 0,
          signal: abort.signal,
        } as Parameters<typeof request>[1]);
        // read at most a little of the answer; only the status counts
        await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        return { status: res.statusCode, headers: res.headers, durationMs: Math.round(performance.now() - started) };
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => agent.close(),
  };
}
