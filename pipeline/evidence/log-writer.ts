/**
 * The port the sequencer appends through: a writer that only one process of a deployment can
 * hold at a time. Taking it (`claim`) deposes whoever held it before, and from then on the
 * deposed writer's appends are refused by the store itself, whatever that process still
 * believes. The Kafka adapter is platform/kafka/fenced-writer.ts.
 */
export interface FencedLogWriter {
  /**
   * Takes the writer over: every earlier holder is fenced off and its unfinished append
   * abandoned. Resolves once nothing an earlier holder does can land in the log any more, so the
   * log's tail read after it is final.
   */
  claim(): Promise<void>;
  /** Appends records all or nothing; throws `WriterFencedError` when another process has claimed since. */
  append(records: readonly { topic: string; key: string; value: Buffer }[]): Promise<void>;
  close(): Promise<void>;
}

/** Another process claimed the log writer: this one is no longer the log's owner. Never retriable. */
export class WriterFencedError extends Error {
  readonly retriable = false;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WriterFencedError';
  }
}
