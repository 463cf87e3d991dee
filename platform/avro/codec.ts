import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { Type, type Resolver } from 'avsc';
import { SCHEMA_FILES, type RecordName, type RecordTypes } from './records';

export const SCHEMA_DIR = path.resolve(__dirname, '../../schemas');

export function readSchema(name: RecordName): string {
  return readFileSync(path.join(SCHEMA_DIR, SCHEMA_FILES[name]), 'utf8');
}

/** Which record each topic carries; its subject is `<topic>-value` (Confluent's TopicNameStrategy). */
export type TopicRecords = Partial<Record<string, RecordName>>;

/**
 * Avro in the Confluent wire format (magic byte, 4-byte schema id, Avro binary), with the
 * schemas registered once per subject at start. Readers decode with whatever writer schema
 * id a record carries, so producers that registered a compatible newer schema still work.
 */
export class AvroCodec {
  private readonly ids = new Map<string, number>();

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
      }),
    );
  }

  schemaId(topic: string): number {
    const id = this.ids.get(topic);
    if (id === undefined) throw new Error(`no schema registered for topic ${topic}`);
    return id;
  }

  encode<N extends RecordName>(topic: string, _name: N, value: RecordTypes[N]): Promise<Buffer> {
    return this.registry.encode(this.schemaId(topic), value);
  }

  /**
   * Decodes a record. Bytes that can never decode (not the wire format, a schema id no registry
   * holds, Avro that does not parse) throw {@link UndecodableRecordError}; a registry that cannot
   * be reached throws its own error, since the same bytes decode once it answers.
   */
  async decode<N extends RecordName>(_name: N, buffer: Buffer): Promise<RecordTypes[N]> {
    const { id, writer } = await this.writerOf(buffer);
    try {
      return writer.fromBuffer(buffer.subarray(5)) as RecordTypes[N];
    } catch (err) {
      throw new UndecodableRecordError(`its Avro does not decode with schema ${id}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * A reader of some fields of `name` only: the others are skipped over, not built (for a
   * WebhookEvent, no header strings and no body copy). Fails as `decode` does.
   */
  projection<N extends RecordName, K extends keyof RecordTypes[N] & string>(name: N, fields: readonly K[]): (buffer: Buffer) => Promise<Pick<RecordTypes[N], K>> {
    const full = JSON.parse(readSchema(name)) as { name: string; namespace?: string; fields: { name: string }[] };
    const reader = Type.forSchema({ ...full, fields: full.fields.filter((f) => (fields as readonly string[]).includes(f.name)) } as never);
    const resolvers = new Map<number, Resolver>();
    return async (buffer) => {
      const { id, writer } = await this.writerOf(buffer);
      try {
        let resolver = resolvers.get(id);
        if (!resolver) resolvers.set(id, (resolver = reader.createResolver(writer)));
        return reader.fromBuffer(buffer.subarray(5), resolver) as Pick<RecordTypes[N], K>;
      } catch (err) {
        throw new UndecodableRecordError(`its Avro does not decode with schema ${id}: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
  }

  private async writerOf(buffer: Buffer): Promise<{ id: number; writer: Type }> {
    if (buffer.length < 5 || buffer[0] !== 0) throw new UndecodableRecordError('it is not in the schema registry wire format (magic byte 0, schema id, Avro)');
    const id = buffer.readInt32BE(1);
    try {
      return { id, writer: (await this.registry.getSchema(id)) as unknown as Type };
    } catch (err) {
      if ((err as { status?: unknown }).status === 404) throw new UndecodableRecordError(`its schema id ${id} is not in the registry`);
      throw err;
    }
  }
}

/** Bytes that no registry state or retry will ever decode: a poison record. */
export class UndecodableRecordError extends Error {
  override name = 'UndecodableRecordError';
}
