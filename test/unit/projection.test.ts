import { Type } from 'avsc';
import { AvroCodec, readSchema, UndecodableRecordError } from '../../platform/avro/codec';
import type { WebhookEvent } from '../../platform/avro/records';

const wire = (id: number, avro: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 0, id]), avro]);

describe('decoding some fields of a record', () => {
  const current = Type.forSchema(JSON.parse(readSchema('WebhookEvent')));
  // a newer writer: one field more, at the end, as schema evolution adds them
  const newer = Type.forSchema({ ...JSON.parse(readSchema('WebhookEvent')), fields: [...JSON.parse(readSchema('WebhookEvent')).fields, { name: 'extra', type: 'string', default: '' }] });
  const writers = new Map<number, Type>([[1, current], [2, newer]]);
  const codec = new AvroCodec({ getSchema: async (id: number) => writers.get(id) ?? Promise.reject(Object.assign(new Error('not found'), { status: 404 })) } as never);
  const event: WebhookEvent = {
    event_id: 'evt_1', tenant_id: 'tenant-a', ingester_id: 'ing_1', correlation_id: 'cor_1', received_at: 1_700_000_000_000,
    method: 'POST', query: 'a=1', headers: [{ name: 'x-a', value: 'b' }, { name: 'x-c', value: 'd' }], content_type: 'application/json',
    body: Buffer.from('{"hello":"world"}'), source_ip: '127.0.0.1', event_type: 'order.created', hops: 1,
  };
  const read = codec.projection('WebhookEvent', ['event_id', 'tenant_id', 'ingester_id', 'correlation_id']);

  it('reads exactly the fields asked for, from every writer schema version', async () => {
    for (const [id, writer] of writers) {
      const value = await read(wire(id, writer.toBuffer(id === 2 ? { ...event, extra: 'x' } : event)));
      expect({ ...value }).toEqual({ event_id: 'evt_1', tenant_id: 'tenant-a', ingester_id: 'ing_1', correlation_id: 'cor_1' });
    }
  });

  it('fails on bytes that never decode as the whole record does', async () => {
    await expect(read(Buffer.from('not avro'))).rejects.toBeInstanceOf(UndecodableRecordError);
    await expect(read(wire(9, current.toBuffer(event)))).rejects.toThrow(/schema id 9 is not in the registry/);
    await expect(read(wire(1, Buffer.from([0x80])))).rejects.toBeInstanceOf(UndecodableRecordError);
    await expect(codec.decode('WebhookEvent', wire(1, Buffer.from([0x80])))).rejects.toBeInstanceOf(UndecodableRecordError);
  });
});
