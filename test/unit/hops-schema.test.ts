import avro from 'avsc';
import { readSchema } from '../../platform/avro/codec';
import { outboundHeaders } from '../../pipeline/deliver/stage';
import type { DeliveryTask } from '../../platform/avro/records';
import type { Destination } from '../../core/model';
import { newSigningSecret } from '../../core/signing/standard-webhooks';

/** The schema as it was before `hops`: the same record without the field. */
function withoutHops(name: 'WebhookEvent' | 'DeliveryTask'): avro.Type {
  const schema = JSON.parse(readSchema(name)) as { fields: { name: string }[] };
  return avro.Type.forSchema({ ...schema, fields: schema.fields.filter((f) => f.name !== 'hops') } as avro.Schema);
}

const task = { delivery_id: 'dlv_1', event_id: 'evt_1', tenant_id: 't', ingester_id: 'ing_1', destination_id: 'dst_1', correlation_id: 'cor_1', attempt: 1, not_before: 1, received_at: 1, content_type: null, body: Buffer.from('{}'), replay_of: null };

describe('the hop count on records', () => {
  it.each(['WebhookEvent', 'DeliveryTask'] as const)('%s records written before the field still decode, as 0 hops', (name) => {
    const current = avro.Type.forSchema(JSON.parse(readSchema(name)) as avro.Schema);
    const old = withoutHops(name);
    const sample = name === 'DeliveryTask' ? task : { event_id: 'evt_1', tenant_id: 't', ingester_id: 'ing_1', correlation_id: 'c', received_at: 1, method: 'POST', query: '', headers: [], content_type: null, body: Buffer.from('{}'), source_ip: null, event_type: null };
    const decoded = current.fromBuffer(old.toBuffer(sample), current.createResolver(old)) as { hops: number };
    expect(decoded.hops).toBe(0);
  });

  it('sends one hop more than the task carries, and 1 for a task decoded without the field', () => {
    const destination = { signing_secret: newSigningSecret() } as Destination;
    expect(outboundHeaders({ ...task, hops: 2 }, destination, Date.now())['x-hookline-hops']).toBe('3');
    expect(outboundHeaders(task as unknown as DeliveryTask, destination, Date.now())['x-hookline-hops']).toBe('1');
  });
});
