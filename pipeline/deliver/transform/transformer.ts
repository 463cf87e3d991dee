/** What a destination's transformation is given: one delivery, before it is sent. */
export interface TransformInput {
  /** The event's id (evt_…). */
  id: string;
  delivery_id: string;
  destination_id: string;
  attempt: number;
  content_type: string | null;
  /** The event's body: parsed when it is JSON, else the text (UTF-8). */
  body: unknown;
  received_at: string;
}

/** What the transformation made of it: what is sent instead, or null to send nothing. */
export interface TransformOutput {
  /** The bytes sent, and their content type when the transformation decided it. */
  body: Buffer;
  content_type?: string;
  /** Extra headers; never replacing the service's own (webhook-*, content-type, the hop count). */
  headers?: Record<string, string>;
  /** Webhook destinations only: the method (POST by default) and a path replacing the URL's. */
  method?: string;
  path?: string;
}

export type TransformResult =
  | { ok: true; output: TransformOutput | null; cpuMs: number }
  /** The attempt fails with this message: the code threw, ran out of time or memory, or returned something unusable. */
  | { ok: false; error: string; cpuMs: number };

export interface Transformer {
  /** Runs `code` (defining `function transform(event)`) on `input` for `tenantId`, never in the service's own V8. */
  run(code: string, input: TransformInput, tenantId: string): Promise<TransformResult>;
  /** Why `code` cannot run (too large, does not compile, defines no transform), or undefined. */
  check(code: string): Promise<string | undefined>;
  close(): Promise<void>;
}
