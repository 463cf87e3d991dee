import type { Producer } from 'kafkajs';
import { Logger } from '../../core/log';
import { groupPrefixOf } from '../../core/topics';
import { parseKeyring } from '../../core/secrets/keyring';
import { AvroCodec } from '../../platform/avro/codec';
import { ConfigStore } from '../../platform/config-store/config-store';
import { DataKeys } from '../../platform/secrets/data-keys';
import { BatchingProducer } from '../../platform/kafka/batching-producer';
import { createProducer } from '../../platform/kafka/client';
import { readTopic, type StoredRecord } from '../../platform/kafka/topic-table';
import { filterStage } from '../../pipeline/filter/stage';
import { routeStage } from '../../pipeline/route/stage';
import { CONFIG_VERSION_HEADER } from '../../pipeline/runtime/config-version';
import { runStage, type RunningStage } from '../../pipeline/runtime/run-stage';
import { chainStages } from '../../pipeline/runtime/stage';
import { validateStage } from '../../pipeline/validate/stage';
import { topology } from '../../service/topology';
import { destinationWithIngester, sendEvent, transitionsOf, waitForStates } from '../support/flow';
import { startReceiver, type Receiver } from '../support/receiver';
import { eventually, startTestService, type TestService } from '../support/service';
import { randomEvidenceKey } from '../support/keyring';

const versionOf = (r: StoredRecord): bigint | undefined => {
  const raw = r.headers[CONFIG_VERSION_HEADER];
  return raw === undefined ? undefined : BigInt(String(raw));
};

/**
 * Two processes of one deployment: this service takes webhooks and delivers them; a second
 * "process" in the test runs validate, filter and route with a config store of its own that
 * lags behind (it has not read the config topic yet when the webhook arrives).
 */
describe('a configuration change reaches every process in order', () => {
  let svc: TestService;
  let r: Receiver;
  let producer: Producer;
  const running: RunningStage[] = [];
  const stores: ConfigStore[] = [];

  /** The validating process: its chain, deciding with `store` and waiting at most `waitMs` for it. */
  const validatingProcess = async (waitMs: number) => {
    const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    await codec.register(topology(svc.service.topics, svc.config.kafkaPartitions).records);
    const store = new ConfigStore(svc.service.kafka, codec, svc.service.topics.config, parseKeyring(process.env.SECRETS_KEK!, 'SECRETS_KEK'));
    // it opens the bodies it reads with the tenants' data keys, here from the service's own view of
    // the config topic: what lags in this process is the configuration its stages decide with (a
    // process whose view never starts holds no key either, and reads no body until it has one)
    codec.sealBodies(new DataKeys(svc.service.store));
    stores.push(store);
    const { topics } = svc.service;
    const chain = chainStages(validateStage(topics, store), filterStage(topics, store), routeStage(topics, store, 50));
    const stage = await runStage(chain, {
      kafka: svc.service.kafka,
      outputs: new BatchingProducer(producer),
      codec,
      log: new Logger('error'),
      groupPrefix: groupPrefixOf(svc.config.topicPrefix),
      deadLetterTopic: topics.eventsDlq,
      config: { versions: store, waitMs },
    });
    running.push(stage);
    return { store, stage };
  };

  beforeAll(async () => {
    // no validate stage here: the test's second process is the only one
    [svc, r] = await Promise.all([startTestService({ STAGES: 'api,deliver,retry,evidence,sink', EVIDENCE_SIGNING_KEY: randomEvidenceKey() }), startReceiver()]);
    producer = createProducer(svc.service.kafka);
    await producer.connect();
  });
  afterAll(async () => {
    for (const s of running.splice(0)) await s.stop();
    await Promise.all(stores.map((s) => s.stop()));
    await producer?.disconnect();
    await Promise.all([svc?.stop(), r?.close()]);
  });

  it('validates a webhook for an ingester the validating process learns of late, and every record names a version that has it', async () => {
    const { hookUrl, ingesterId } = await destinationWithIngester(svc, 'ordered', r.url);
    const ingesterVersion = svc.service.store.versionOf('ingester', svc.tenantId, ingesterId)!;
    expect(ingesterVersion).toBeGreaterThanOrEqual(0n);

    const late = await validatingProcess(60_000);
    expect(late.store.version).toBe(-1n);
    const eventId = await sendEvent(hookUrl, { ordered: true });
    // held: the validating process does not know the ingester, and neither refuses nor passes it
    await new Promise((res) => setTimeout(res, 2_000));
    expect(r.requests).toHaveLength(0);
    expect(await readTopic(svc.service.kafka, svc.service.topics.validated)).toHaveLength(0);
    expect(await readTopic(svc.service.kafka, svc.service.topics.transitions)).toHaveLength(0);

    await late.store.start();
    const [got] = await r.waitForRequests(1, 30_000);
    expect(JSON.parse(got!.body.toString())).toEqual({ ordered: true });
    const rows = await waitForStates(svc, eventId, ['received', 'validated', 'filtered', 'delivered']);
    expect(rows.map((t) => t.state)).not.toContain('failed');

    const { topics } = svc.service;
    for (const topic of [topics.received, topics.validated, topics.filtered, topics.deliveryRequested, topics.deliveryCompleted, topics.transitions]) {
      for (const record of await readTopic(svc.service.kafka, topic)) {
        const version = versionOf(record);
        if (version === undefined) throw new Error(`a record on ${topic} names no configuration version`);
        expect(version).toBeGreaterThanOrEqual(ingesterVersion);
      }
    }
    for (const topic of [topics.received, topics.validated, topics.filtered, topics.deliveryRequested, topics.deliveryCompleted]) {
      expect((await readTopic(svc.service.kafka, topic)).length).toBeGreaterThan(0);
    }
    await running.pop()!.stop();
  });

  it('never holds a record for good: past the wait it is decided with what the process has', async () => {
    const { hookUrl } = await destinationWithIngester(svc, 'never learnt', r.url);
    // a store that never starts: the ingester never arrives in this process
    await validatingProcess(300);
    const eventId = await sendEvent(hookUrl, { late: true });
    const rows = await eventually('the webhook refused', async () => {
      const t = await transitionsOf(svc, eventId);
      return t.some((row) => row.state === 'failed') ? t : undefined;
    });
    expect(rows.find((row) => row.state === 'failed')!.reason).toBe('verification failed: the ingester no longer exists');
  });
});
