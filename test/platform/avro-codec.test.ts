import { AvroCodec, UndecodableRecordError } from '../../platform/avro/codec';
import type { DeliveryOutcome } from '../../platform/avro/records';
import { uniqueSuffix } from '../support/ids';

/** The stages encode and decode without a promise once a schema is known: the same bytes and values as the registry client's. */
describe('Avro codec without promises', () => {
  const topic = `codec${uniqueSuffix()}.deliveries.completed`;
  const outcome: DeliveryOutcome = {
    delivery_id: 'dlv_1', event_id: 'evt_1', tenant_id: 'tenant-a', destination_id: 'dst_1', correlation_id: 'cor_1', attempt_number: 2,
    status: 'delivered', response_code: 200, attempted_at: 1_790_000_000_000, duration_ms: 12, error_message: null, body_sha256: 'ab'.repeat(32),
    next_attempt_at: null, replay_of: null, replay_job_id: null, response_body: 'ok', destination_change: null, event_type: null, ingester_id: '', received_at: null,
  };

  it('encodes registered topics as the registry client does, and leaves the rest to it', async () => {
    const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    expect(codec.encodeNow(topic, 'DeliveryOutcome', outcome)).toBeUndefined();
    await codec.register({ [topic]: 'DeliveryOutcome' });
    const now = codec.encodeNow(topic, 'DeliveryOutcome', outcome);
    expect(now).toEqual(await codec.encode(topic, 'DeliveryOutcome', outcome));
    // records of every size, one larger than what the codec writes into first, each as its own bytes
    const sized = [0, 2_000, 200_000, 10].map((n) => ({ ...outcome, response_body: 'x'.repeat(n) }));
    const written = sized.map((o) => codec.encodeNow(topic, 'DeliveryOutcome', o)!);
    for (const [i, o] of sized.entries()) {
      expect(written[i]).toEqual(await codec.encode(topic, 'DeliveryOutcome', o));
      expect(codec.decodeNow('DeliveryOutcome', written[i]!)).toEqual(o);
    }
    // a value that does not fit: no bytes here, the client's error there
    const unfit = { ...outcome, attempt_number: 'two' } as unknown as DeliveryOutcome;
    expect(codec.encodeNow(topic, 'DeliveryOutcome', unfit)).toBeUndefined();
    await expect(codec.encode(topic, 'DeliveryOutcome', unfit)).rejects.toThrow();
    expect(codec.decodeNow('DeliveryOutcome', now!)).toEqual(outcome);
  });

  it('decodes once the writer schema is known, after the first decode of its id', async () => {
    const writer = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    await writer.register({ [topic]: 'DeliveryOutcome' });
    const bytes = writer.encodeNow(topic, 'DeliveryOutcome', outcome)!;
    const reader = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    expect(reader.decodeNow('DeliveryOutcome', bytes)).toBeUndefined();
    expect(await reader.decode('DeliveryOutcome', bytes)).toEqual(outcome);
    expect(reader.decodeNow('DeliveryOutcome', bytes)).toEqual(outcome);
    const fields = reader.projection('DeliveryOutcome', ['delivery_id', 'attempt_number']);
    expect({ ...fields.now(bytes) }).toEqual({ delivery_id: 'dlv_1', attempt_number: 2 });
    // bytes that never decode fail at once, as decode rejects
    expect(() => reader.decodeNow('DeliveryOutcome', Buffer.from('not avro'))).toThrow(UndecodableRecordError);
    expect(() => reader.decodeNow('DeliveryOutcome', Buffer.concat([bytes.subarray(0, 5), Buffer.from([0x80])]))).toThrow(UndecodableRecordError);
    await expect(reader.decode('DeliveryOutcome', Buffer.concat([bytes.subarray(0, 5), Buffer.from([0x80])]))).rejects.toBeInstanceOf(UndecodableRecordError);
  });
});
