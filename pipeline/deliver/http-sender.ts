import type { Readable } from 'node:stream';
import { request, type Dispatcher } from 'undici';
import { unresolvedCodeOf, unresolvedMessage } from '../../platform/http/guarded-lookup';

/** Bytes of a response body kept for search and the attempt view; the rest is drained unread. */
export const RESPONSE_BODY_KEPT_BYTES = 4096;
/** Beyond this much left unread, the connection is closed instead of drained for reuse. */
const DRAIN_LIMIT_BYTES = 64 * 1024;

export interface SendRequest {
  url: string;
  /** POST unless a transformation chose another. */
  method?: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface SendResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  durationMs: number;
  /** The first RESPONSE_BODY_KEPT_BYTES bytes of the body (absent when the sender keeps none). */
  body?: Buffer;
}

/**
 * What a failed send says in its attempt's error: a name that does not resolve (yet) says so
 * plainly, naming the host as the destination spells it; anything else keeps its own message.
 */
export function sendErrorMessage(err: unknown, url: string): string {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = unresolvedCodeOf(e);
    if (code !== undefined) return unresolvedMessage(new URL(url).hostname, code);
  }
  return err instanceof Error ? err.message : String(err);
}

/** The one port the delivery stage sends through. */
export interface HttpSender {
  send(req: SendRequest): Promise<SendResult>;
  close(): Promise<void>;
}

/**
 * undici through the given agent (the SSRF-guarded one in the service), with a total timeout
 * per attempt; the start of the response body is kept, the rest drained (or the connection
 * closed when too much is left).
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
          method: req.method ?? 'POST',
          headers: req.headers,
          body: req.body,
          dispatcher: agent,
          maxRedirections: 0,
          signal: abort.signal,
        } as Parameters<typeof request>[1]);
        const body = await readStart(res.body, RESPONSE_BODY_KEPT_BYTES);
        // what is left: drained so the connection is reused, or the connection closed when it is long
        await res.body.dump({ limit: DRAIN_LIMIT_BYTES }).catch(() => undefined);
        return { status: res.statusCode, headers: res.headers, durationMs: Math.round(performance.now() - started), body };
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => agent.close(),
  };
}

/**
 * Up to `max` bytes from the start of `body`, leaving the stream paused after them (or ended);
 * a body that fails midway gives what arrived before.
 */
export function readStart(body: Readable, max: number): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      body.off('data', onData).off('end', finish).off('error', finish).off('close', finish);
      body.pause();
      resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      const taken = chunk.subarray(0, max - size);
      chunks.push(taken);
      size += taken.length;
      if (size >= max) finish();
    };
    // an error after the start was read must not go unheard while nobody else listens yet
    body.on('error', () => undefined);
    body.on('data', onData).once('end', finish).once('error', finish).once('close', finish);
  });
}
