import { AvroCodec } from '../../platform/avro/codec';
import type { WebhookEvent } from '../../platform/avro/records';
import { readTopic } from '../../platform/kafka/topic-table';
import { BODY_OMITTED_HEADER } from '../../pipeline/runtime/stage';
import { destinationWithIngester, sendEvent, waitForStates } from '../support/flow';
import { startReceiver, type Receiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/**
 * Records carry the body only where a consumer reads it: the received event (the chain's input,
 * read again after a crash) and the delivery task (deliver's input) do; the validated and filtered
 * records, which the chain hands on in memory and only the sink reads back for their states, are
 * written without it. The states are still recorded, and the body is delivered byte for byte.
 */
describe('the bodies on the event path', () => {
  let svc: TestService;
  let receiver: Receiver;

  beforeAll(async () => {
    svc = await startTestService();
    receiver = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    await receiver?.close();
    await svc?.stop();
  });

  it('are on the received event and the delivery task, not on the validated and filtered records', async () => {
    const { hookUrl } = await destinationWithIngester(svc, 'bodies', receiver.url);
    const body = { order: 'ord_1', lines: Array.from({ length: 20 }, (_, i) => ({ sku: `sku_${i}`, qty: i })) };
    const eventId = await sendEvent(hookUrl, body);
    const [got] = await receiver.waitForRequests(1, 30_000);
    expect(JSON.parse(got!.body.toString())).toEqual(body);
    await waitForStates(svc, eventId, ['received', 'validated', 'filtered', 'delivered']);

    const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    const { topics, kafka } = svc.service;
    const stored = async (topic: string, record: 'WebhookEvent' | 'DeliveryTask') => {
      for (const r of await readTopic(kafka, topic)) {
        const value = (await codec.decodeStored(record, r.value!)) as WebhookEvent;
        if (value.event_id === eventId) return { value, omitted: r.headers[BODY_OMITTED_HEADER] !== undefined };
      }
      throw new Error(`no record of ${eventId} on ${topic}`);
    };
    for (const topic of [topics.validated, topics.filtered]) {
      const { value, omitted } = await stored(topic, 'WebhookEvent');
      expect({ topic, bytes: value.body.length, key: value.body_key ?? null, omitted }).toEqual({ topic, bytes: 0, key: null, omitted: true });
    }
    for (const [topic, record] of [[topics.received, 'WebhookEvent'], [topics.deliveryRequested, 'DeliveryTask']] as const) {
      const { value, omitted } = await stored(topic, record);
      // sealed with the tenant's key: longer than the body, never empty
      expect({ topic, full: value.body.length >= JSON.stringify(body).length, omitted }).toEqual({ topic, full: true, omitted: false });
    }
  }, 90_000);
});
