import { topicNames } from '../../core/topics';
import { topology } from '../../service/topology';
import { destinationWithIngester } from '../support/flow';
import { startReceiver, type Receiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/**
 * A webhook as large as a Hook URL accepts (INGEST_MAX_BODY_BYTES, 1 MiB by default) is larger,
 * with its envelope, than Kafka's default record batch limit: the topics that carry bodies take
 * records that large, so the webhook is stored and delivered instead of answered 503 forever.
 */
describe('a webhook body at the size limit', () => {
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

  it('sizes every topic that carries a body for the largest body plus its envelope', () => {
    const { specs } = topology(topicNames('x.'), 2, 4 * 1_048_576);
    const topics = topicNames('x.');
    const bodies = [topics.received, topics.validated, topics.filtered, topics.deliveryRequested, topics.deliveryDlq, topics.eventsDlq, ...topics.retryTiers.map((t) => t.topic)];
    for (const topic of bodies) expect(specs.find((s) => s.topic === topic)?.maxMessageBytes).toBeGreaterThanOrEqual(4 * 1_048_576 + 64 * 1024);
    expect(specs.find((s) => s.topic === topics.transitions)?.maxMessageBytes).toBeUndefined();
  });

  it('is accepted and delivered byte for byte', async () => {
    const limit = svc.config.ingestMaxBodyBytes;
    expect(limit).toBeGreaterThanOrEqual(1_048_576);
    const { hookUrl } = await destinationWithIngester(svc, 'large-body', receiver.url);
    const body = Buffer.alloc(limit, 0x61);
    body.write('{"big":"', 0);
    body.write('"}', limit - 2);
    const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-padding': 'p'.repeat(8000) }, body });
    expect(res.status).toBe(202);
    const [delivered] = await receiver.waitForRequests(1, 60_000);
    expect(delivered!.body.equals(body)).toBe(true);
  }, 90_000);
});
