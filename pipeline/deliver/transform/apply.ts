import type { Destination } from '../../../core/model';
import type { TransformInput, Transformer, TransformOutput } from './transformer';

/** What an attempt sends: the body (as received, or as the destination's transformation made it) and what goes with it. */
export interface Prepared {
  body: Buffer;
  content_type: string | null;
  /** Headers the transformation added; the service's own are set after them and win. */
  headers: Record<string, string>;
  method?: string;
  path?: string;
}

export type Preparation = { kind: 'send'; sent: Prepared; cpuMs: number } | { kind: 'drop'; cpuMs: number } | { kind: 'fail'; error: string; cpuMs: number };

/** The delivery as a transformation sees it. */
export interface Delivered {
  event_id: string;
  delivery_id: string;
  destination_id: string;
  attempt: number;
  content_type: string | null;
  body: Buffer;
  received_at: number;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/** The body as `event.body`: parsed when its type says JSON and it parses, else its text. */
export function bodyValue(body: Buffer, contentType: string | null): unknown {
  const text = body.toString('utf8');
  if (contentType === null || JSON_TYPE.test(contentType)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

export function transformInput(d: Delivered): TransformInput {
  return {
    id: d.event_id,
    delivery_id: d.delivery_id,
    destination_id: d.destination_id,
    attempt: d.attempt,
    content_type: d.content_type,
    body: bodyValue(d.body, d.content_type),
    received_at: new Date(d.received_at).toISOString(),
  };
}

function sentOf(out: TransformOutput, d: Delivered): Prepared {
  return { body: out.body, content_type: out.content_type ?? d.content_type, headers: out.headers ?? {}, ...(out.method ? { method: out.method } : {}), ...(out.path ? { path: out.path } : {}) };
}

/** What an attempt sends without a transformation: the delivery's own body, nothing copied. */
export function asReceived(d: Delivered): Preparation {
  return { kind: 'send', sent: { body: d.body, content_type: d.content_type, headers: {} }, cpuMs: 0 };
}

/**
 * What an attempt of `d` to `destination` sends: the body as received when the destination has
 * no transformation (nothing runs, nothing is copied), else what its transformation made of it,
 * or that it dropped the delivery, or why it failed.
 */
export async function prepare(destination: Pick<Destination, 'transformation' | 'tenant_id'>, d: Delivered, transformer: Transformer | undefined, code = destination.transformation): Promise<Preparation> {
  if (!code) return asReceived(d);
  if (!transformer) return { kind: 'fail', error: 'the destination has a transformation, and this process runs no transformation sandbox', cpuMs: 0 };
  const result = await transformer.run(code, transformInput(d), destination.tenant_id);
  if (!result.ok) return { kind: 'fail', error: result.error, cpuMs: result.cpuMs };
  if (result.output === null) return { kind: 'drop', cpuMs: result.cpuMs };
  return { kind: 'send', sent: sentOf(result.output, d), cpuMs: result.cpuMs };
}
