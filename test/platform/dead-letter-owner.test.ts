import { deadLetterId, ownerOfLetter } from '../../pipeline/dead-letter';
import { AvroCodec } from '../../platform/avro/codec';
import type { DeadLetter, DeliveryTask, EventTransition, WebhookEvent } from '../../platform/avro/records';
import { uniqueSuffix } from '../support/ids';

/**
 * Whose a dead letter is, read from the bytes of its record: the tenant an event, a delivery
 * task or an outcome names, with its ingester or destination; nobody's (the operator's) for
 * bytes that do not decode or for a record no stage reads, whatever tenant the letter's key named.
 */
describe('the owner of a dead letter', () => {
  const prefix = `owner${uniqueSuffix()}.`;
  const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  const event: WebhookEvent = {
    event_id: 'evt_1', tenant_id: 'tenant-a', ingester_id: 'ing_1', correlation_id: 'cor_1', received_at: 1_790_000_000_000, method: 'POST', query: '',
    headers: [], content_type: 'application/json', body: Buffer.from('{}'), source_ip: null, event_type: null, hops: 0,
  };
  const task: DeliveryTask = {
    delivery_id: 'dlv_1', event_id: 'evt_1', tenant_id: 'tenant-b', ingester_id: 'ing_1', destination_id: 'dst_1', correlation_id: 'cor_1', attempt: 1,
    not_before: 0, received_at: 0, content_type: null, body: Buffer.from('{}'), replay_of: null, hops: 0, replay_job_id: null, slot_at: null,
  };
  const transition: EventTransition = { event_id: 'evt_1', tenant_id: 'tenant-c', ingester_id: 'ing_1', state: 'failed', at: 0, correlation_id: 'cor_1', reason: null, delivery_id: null, destination_id: null };

  beforeAll(() => codec.register({ [`${prefix}received`]: 'WebhookEvent', [`${prefix}requested`]: 'DeliveryTask', [`${prefix}transitions`]: 'EventTransition' }));

  it.each([
    ['an event', async () => codec.encode(`${prefix}received`, 'WebhookEvent', event), { record: 'WebhookEvent', tenant_id: 'tenant-a', resource_id: 'ing_1' }],
    ['a delivery task', async () => codec.encode(`${prefix}requested`, 'DeliveryTask', task), { record: 'DeliveryTask', tenant_id: 'tenant-b', resource_id: 'dst_1' }],
    ['a record no stage reads', async () => codec.encode(`${prefix}transitions`, 'EventTransition', transition), { record: 'EventTransition', tenant_id: '', resource_id: '' }],
    ['bytes outside the wire format', async () => Buffer.from('tenant-a/not avro'), { record: '', tenant_id: '', resource_id: '' }],
    ['a schema id no registry holds', async () => Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0, 2, 3]), { record: '', tenant_id: '', resource_id: '' }],
  ] as const)('%s', async (_what, bytes, owner) => {
    expect(await ownerOfLetter(codec, { value: await bytes() })).toEqual(owner);
  });

  it('gives a letter read twice the same id, and another place or stage another', () => {
    const letter: DeadLetter = { stage: 'filter', reason: 'r', source_topic: 't', source_partition: 1, source_offset: 7, key: null, value: Buffer.alloc(0), tenant_id: 'tenant-a', event_id: null, at: 1_790_000_000_000 };
    const id = deadLetterId(letter);
    expect(id).toMatch(/^dlt_[0-9a-z]{26}$/);
    expect(deadLetterId({ ...letter })).toBe(id);
    expect(new Set([id, deadLetterId({ ...letter, source_offset: 8 }), deadLetterId({ ...letter, stage: 'route' }), deadLetterId({ ...letter, source_partition: 0 })]).size).toBe(4);
  });
});
