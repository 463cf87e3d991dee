import { existsSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import { startReceiver, type Receiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';
import { spawnScript, type Spawned } from '../support/process';
import { destinationWithIngester, sendEvent, waitForStates } from '../support/flow';

/** A stage run alone in its own process (`--stage`), beside the others, as for scale-out. */
describe('stages in separate processes', () => {
  let svc: TestService;
  let r: Receiver;
  let deliverer: Spawned | undefined;

  beforeAll(async () => {
    // this process: API, validate, filter, route, evidence and sink; the other: deliver and retry
    [svc, r] = await Promise.all([startTestService({ STAGES: 'api,validate,filter,route,evidence,sink' }), startReceiver()]);
  });
  afterAll(async () => {
    if (deliverer && deliverer.child.exitCode === null) {
      deliverer.child.kill('SIGTERM');
      await deliverer.exited;
    }
    await Promise.all([svc?.stop(), r?.close()]);
  });

  it('delivers through a deliver stage running alone, which opens no ClickHouse engine', async () => {
    const { hookUrl } = await destinationWithIngester(svc, 'scaled', r.url);
    const eventId = await sendEvent(hookUrl, { scaled: true });
    // nothing delivers yet: no process of this deployment runs the deliver stage
    await new Promise((res) => setTimeout(res, 1000));
    expect(r.requests).toHaveLength(0);

    const dataDir = mkdtempSync(path.join(svc.config.dataDir, 'deliverer-'));
    deliverer = spawnScript('service/main.ts', ['--stage', 'deliver', '--stage', 'retry'], {
      ...process.env,
      TOPIC_PREFIX: svc.config.topicPrefix,
      DATA_DIR: dataDir,
      KAFKA_REPLICATION_FACTOR: '1',
      KAFKA_PARTITIONS: '2',
      BOOTSTRAP_DEMO_TENANT: 'false',
      LOG_LEVEL: 'info',
      // the receiver listens on loopback, which production refuses
      DESTINATION_ALLOWED_NETWORKS: 'loopback',
    });
    const [ready] = await deliverer.waitForOutput(/^\{[^\n]*"msg":"service ready"[^\n]*\}$/m);
    expect(JSON.parse(ready).stages).toEqual(['deliver', 'retry']);
    const [got] = await r.waitForRequests(1, 30_000);
    expect(JSON.parse(got!.body.toString())).toEqual({ scaled: true });
    await waitForStates(svc, eventId, ['delivered', 'acked']);
    expect(existsSync(path.join(dataDir, 'clickhouse'))).toBe(false);

    deliverer.child.kill('SIGTERM');
    expect(await deliverer.exited).toBe(0);
  });
});
