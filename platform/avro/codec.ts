import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { Type, type Resolver } from 'avsc';
import { REPO_ROOT } from '../../core/paths';
import { BodySealer, type BodyKeys, type SealableRecord } from '../../core/secrets/body-seal';
import { SCHEMA_FILES, type RecordName, type RecordTypes } from './records';

export const SCHEMA_DIR = path.join(REPO_ROOT, 'schemas');

export function readSchema(name: RecordName): string {
  return readFileSync(path.join(SCHEMA_DIR, SCHEMA_FILES[name]), 'utf8');
}

/** Which record each topic carries; its subject is `<topic>-value` (Confluent's TopicNameStrategy). */
export type TopicRecords = Partial<Record<string, RecordName>>;

/**
 * A reader of one record type: `now` decodes without a promise once the writer schema of the
 * bytes is known in this process (undefined before), the call itself fetches it first.
 */
export type RecordReader<T> = ((buffer: Buffer) => Promise<T>) & { now(buffer: Buffer): T | undefined };

/** The records whose body is sealed on Kafka once the codec has the tenants' data keys (`sealBodies`). */
const SEALED_RECORDS: ReadonlySet<RecordName> = new Set<RecordName>(['WebhookEvent', 'DeliveryTask']);

/**
 * Avro in the Confluent wire format (magic byte, 4-byte schema id, Avro binary), with the
 * schemas registered once per subject at start. Readers decode with whatever writer schema
 * id a record carries, so producers that registered a compatible newer schema still work.
 * A schema is fetched once per id; from then on the stages encode and decode without a promise
 * (an id names the same schema for good).
 *
 * Given the tenants' data keys (`sealBodies`), the codec seals the body of every WebhookEvent and
 * DeliveryTask it encodes and opens it on decoding (core/secrets/body-seal.ts): no stage writes
 * a body in clear and every stage reads one, with nothing to do for it. A body that does not
 * open throws UnopenableBodyError.
 */
export class AvroCodec {
  private readonly ids = new Map<string, number>();
  /** The registered schema of each topic, which its records are written with. */
  private readonly types = new Map<string, Type>();
  /** Every writer schema met so far, by id. */
  private readonly writers = new Map<number, Type>();
  private bodies: BodySealer | undefined;
  /**
   * Where `encodeNow` writes a record before copying it out at its exact size, grown to the largest
   * record met: avsc's `toBuffer` would allocate a zero-filled buffer of its own for every record
   * and write a record larger than its 1 KiB scratch twice (every webhook's, with its body).
   */
  private scratch = Buffer.allocUnsafeSlow(64 * 1024);

  constructor(readonly registry: SchemaRegistry) {}

  static connect(url: string): AvroCodec {
    return new AvroCodec(new SchemaRegistry({ host: url }));
  }

  /** Registers the record schema of every topic under `<topic>-value`. */
  async register(topics: Record<string, RecordName>): Promise<void> {
    await Promise.all(
      Object.entries(topics).map(async ([topic, name]) => {
        const { id } = await this.registry.register(
          { type: SchemaType.AVRO, schema: readSchema(name) },
          { subject: `${topic}-value` },
        );
        this.ids.set(topic, id);
        // the registry client keeps what it registered: no request more
        const type = (await this.registry.getSchema(id)) as unknown as Type;
        this.types.set(topic, type);
        this.writers.set(id, type);
      }),
    );
  }

  /** Seals the bodies of the records encoded from now on with the tenants' data keys, and opens those decoded. */
  sealBodies(keys: BodyKeys): void {
    this.bodies = new BodySealer(keys);
  }

  schemaId(topic: string): number {
    const id = this.ids.get(topic);
    if (id === undefined) throw new Error(`no schema registered for topic ${topic}`);
    return id;
  }

  /** The record's bytes; a tenant's first record may wait for its data key to be made. */
  async encode<N extends RecordName>(topic: string, name: N, value: RecordTypes[N]): Promise<Buffer> {
    const id = this.schemaId(topic);
    const stored = SEALED_RECORDS.has(name) ? (this.bodies ? await this.bodies.seal(value as SealableRecord) : unsealed(value as SealableRecord)) : value;
    return this.registry.encode(id, stored);
  }

  /**
   * `encode` without a promise, the same bytes: undefined when the topic has no schema registered
   * here, the value does not fit it (`encode` then rejects saying why), or its tenant's data key
   * is still to be made.
   */
  encodeNow<N extends RecordName>(topic: string, name: N, value: RecordTypes[N]): Buffer | undefined {
    const type = this.types.get(topic);
    if (type === undefined) return undefined;
    const stored = SEALED_RECORDS.has(name) ? (this.bodies ? this.bodies.sealNow(value as SealableRecord) : unsealed(value as SealableRecord)) : value;
    if (stored === undefined) return undefined;
    let end: number;
    try {
      // written after the 5 bytes of the wire format's head; a negative end is the bytes missing
      while ((end = type.encode(stored, this.scratch, 5)) < 0) this.scratch = Buffer.allocUnsafeSlow(Math.max(2 * this.scratch.length, this.scratch.length - end));
    } catch {
      return undefined;
    }
    const wire = Buffer.allocUnsafe(end);
    this.scratch.copy(wire, 5, 5, end);
    wire[0] = 0;
    wire.writeInt32BE(this.ids.get(topic)!, 1);
    return wire;
  }

  /**
   * Decodes a record. Bytes that can never decode (not the wire format, a schema id no registry
   * holds, Avro that does not parse) throw {@link UndecodableRecordError}; a registry that cannot
   * be reached throws its own error, since the same bytes decode once it answers.
   */
  async decode<N extends RecordName>(name: N, buffer: Buffer): Promise<RecordTypes[N]> {
    const { id, writer } = await this.writerOf(buffer);
    const value = decodeWith(writer, id, buffer) as RecordTypes[N];
    if (!SEALED_RECORDS.has(name)) return value;
    return this.bodies ? ((await this.bodies.open(value as SealableRecord, true)) as RecordTypes[N]) : (unsealed(value as SealableRecord) as RecordTypes[N]);
  }

  /**
   * A record as it is stored on Kafka: a sealed body stays sealed, named by `body_key`. For readers
   * that look at the stored form (what a log segment holds), never for a stage, which reads the body.
   */
  async decodeStored<N extends RecordName>(_name: N, buffer: Buffer): Promise<RecordTypes[N]> {
    const { id, writer } = await this.writerOf(buffer);
    return decodeWith(writer, id, buffer) as RecordTypes[N];
  }

  /**
   * Bytes of any record, decoded with their writer schema, with that schema's name (`WebhookEvent`):
   * for bytes whose record is not known beforehand (the input a dead letter carries). Fails as
   * `decode` does. A body stays as stored (sealed when `body_key` names a key): readers of these
   * records want whose they are, never their body.
   */
  async decodeNamed(buffer: Buffer): Promise<{ record: string; value: unknown }> {
    const { id, writer } = await this.writerOf(buffer);
    const name = writer.name ?? '';
    return { record: name.slice(name.lastIndexOf('.') + 1), value: decodeWith(writer, id, buffer) };
  }

  /** `decode` without a promise: undefined while the writer schema of the bytes, or the key of its body, is not known here. */
  decodeNow<N extends RecordName>(name: N, buffer: Buffer): RecordTypes[N] | undefined {
    const id = wireSchemaId(buffer);
    const writer = this.writers.get(id);
    if (writer === undefined) return undefined;
    const value = decodeWith(writer, id, buffer) as RecordTypes[N];
    if (!SEALED_RECORDS.has(name)) return value;
    return this.bodies ? (this.bodies.openNow(value as SealableRecord, true) as RecordTypes[N] | undefined) : (unsealed(value as SealableRecord) as RecordTypes[N]);
  }

  /**
   * A reader of some fields of `name` only: the others are skipped over, not built (for a
   * WebhookEvent, no header strings and no body copy). Fails as `decode` does; a body read is opened.
   */
  projection<N extends RecordName, K extends keyof RecordTypes[N] & string>(name: N, fields: readonly K[]): RecordReader<Pick<RecordTypes[N], K>> {
    const full = JSON.parse(readSchema(name)) as { name: string; namespace?: string; fields: { name: string }[] };
    // a body opens only with what it is bound to
    const opens = SEALED_RECORDS.has(name) && (fields as readonly string[]).includes('body');
    const wanted = opens ? [...fields, 'tenant_id', 'event_id', 'received_at', 'body_key'] : (fields as readonly string[]);
    const reader = Type.forSchema({ ...full, fields: full.fields.filter((f) => wanted.includes(f.name)) } as never);
    const resolvers = new Map<number, Resolver>();
    const read = (writer: Type, id: number, buffer: Buffer) => {
      try {
        let resolver = resolvers.get(id);
        if (!resolver) resolvers.set(id, (resolver = reader.createResolver(writer)));
        return reader.fromBuffer(buffer.subarray(5), resolver) as Pick<RecordTypes[N], K>;
      } catch (err) {
        throw undecodableAvro(id, err);
      }
    };
    type Read = Pick<RecordTypes[N], K>;
    const later = async (buffer: Buffer) => {
      const { id, writer } = await this.writerOf(buffer);
      const value = read(writer, id, buffer);
      if (!opens) return value;
      return this.bodies ? ((await this.bodies.open(value as unknown as SealableRecord, true)) as unknown as Read) : (unsealed(value as unknown as SealableRecord) as unknown as Read);
    };
    return Object.assign(later, {
      now: (buffer: Buffer) => {
        const id = wireSchemaId(buffer);
        const writer = this.writers.get(id);
        if (writer === undefined) return undefined;
        const value = read(writer, id, buffer);
        if (!opens) return value;
        return this.bodies ? (this.bodies.openNow(value as unknown as SealableRecord, true) as unknown as Read | undefined) : (unsealed(value as unknown as SealableRecord) as unknown as Read);
      },
    });
  }

  private async writerOf(buffer: Buffer): Promise<{ id: number; writer: Type }> {
    const id = wireSchemaId(buffer);
    const known = this.writers.get(id);
    if (known) return { id, writer: known };
    try {
      const writer = (await this.registry.getSchema(id)) as unknown as Type;
      this.writers.set(id, writer);
      return { id, writer };
    } catch (err) {
      if ((err as { status?: unknown }).status === 404) throw new UndecodableRecordError(`its schema id ${id} is not in the registry`);
      throw err;
    }
  }
}

/**
 * The record itself, when its body is in clear. A body sealed under a key (read by a codec without
 * the tenants' data keys) is refused, not passed on: sent or written again as it is, its sealed
 * bytes would pass for the body.
 */
function unsealed<R extends SealableRecord>(record: R): R {
  if (record.body_key != null) throw new Error(`the body of ${record.event_id} is sealed with data key ${record.body_key}, and this codec holds no data keys (AvroCodec.sealBodies)`);
  return record;
}

/** The schema id of bytes in the wire format; throws UndecodableRecordError for other bytes. */
function wireSchemaId(buffer: Buffer): number {
  if (buffer.length < 5 || buffer[0] !== 0) throw new UndecodableRecordError('it is not in the schema registry wire format (magic byte 0, schema id, Avro)');
  return buffer.readInt32BE(1);
}

function decodeWith(writer: Type, id: number, buffer: Buffer): unknown {
  try {
    return writer.fromBuffer(buffer.subarray(5));
  } catch (err) {
    throw undecodableAvro(id, err);
  }
}

function undecodableAvro(id: number, err: unknown): UndecodableRecordError {
  return new UndecodableRecordError(`its Avro does not decode with schema ${id}: ${err instanceof Error ? err.message : String(err)}`);
}

/** Bytes that no registry state or retry will ever decode: a poison record. */
export class UndecodableRecordError extends Error {
  override name = 'UndecodableRecordError';
}
