import type { Logger } from '../../core/log';
import type { RecordName, RecordTypes } from '../../platform/avro/records';

/** A record a stage wants written; the runner encodes it and produces it with acks=all. */
export interface Output<N extends RecordName = RecordName> {
  topic: string;
  key: string;
  record: N;
  value: RecordTypes[N];
}

export type AnyOutput = { [N in RecordName]: Output<N> }[RecordName];

export interface StageContext {
  log: Logger;
  /** Where the input record sits in its topic. */
  position: { partition: number; offset: string };
  /** The input record as consumed, for a dead letter that must carry its original bytes. */
  source: { topic: string; key: Buffer | null; value: Buffer };
}

/**
 * A stage that turns each input record into output records. The handler may have side
 * effects through the ports its factory was given; the runtime (consume.ts and the runners on
 * it) owns everything Kafka: consuming, batching, commits, retries and dead letters.
 */
export interface RecordStage<N extends RecordName = RecordName> {
  kind: 'record';
  name: string;
  input: { topic: string; record: N };
  /**
   * Topics its outputs may go to (from the consumer table in core/topics.ts): the runner treats
   * an output elsewhere as the handler's failure. Unset, any topic is allowed.
   */
  writes?: readonly string[];
  /** How many records of one batch are handled at once; outputs keep input order. */
  concurrency?: number;
  /**
   * The failure policy: times `handle` is tried on one record before the record becomes a dead
   * letter (with the reason and its original bytes) and the partition goes on. Default 3.
   */
  attempts?: number;
  handle(value: RecordTypes[N], ctx: StageContext): Promise<AnyOutput[]>;
}

/** Throws when an output goes to a topic the stage does not declare it writes. */
export function checkWrites(stage: { name: string; writes?: readonly string[] }, outputs: readonly AnyOutput[]): void {
  if (!stage.writes) return;
  for (const o of outputs) {
    if (!stage.writes.includes(o.topic)) throw new Error(`stage ${stage.name} wrote to ${o.topic}, which it does not declare`);
  }
}

export type Stage = RecordStage<'WebhookEvent'> | RecordStage<'DeliveryTask'> | RecordStage<'DeliveryOutcome'>;
