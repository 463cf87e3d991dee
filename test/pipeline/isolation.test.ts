import { startReceiver, type Receiver } from '../support/receiver';
import { destinationWithIngester } from '../support/flow';
import { eventually, startTestService, type TestService } from '../support/service';
import { consumerLag, waitForIdle } from '../support/idle';
import { FirstArrivals, machineCpu, median, sendConcurrently } from '../support/load';

/**
 * A destination that accepts connections and never answers must not slow delivery to a healthy
 * one. Each round sends N events to the healthy destination H and, at the same time, N events to
 * another destination: a fast one (scenario A, the baseline, so the pipeline does the same work)
 * or a dead one (scenario B). The measure is the time from the first send until H has received
 * all N events of the round, over the time until all 2N sends were accepted: the same ingest
 * work in both scenarios, and what a burst of other test files' load on the shared machine
 * stretches alike. A round where H waits for the dead destination ends long after its last
 * acceptance. A and B alternate and their medians are compared.
 *
 * Tasks are keyed by event, so every destination's spread over every partition of
 * deliveries.requested: H's tasks sit in the same partitions behind the dead destination's
 * unfinished ones, so no partition's committed offset can pass them while H is being served.
 */
const N = 300;
/** Concurrent senders per ingester. */
const SENDERS = 16;
/**
 * Rounds to warm up, not counted: the run's Kafka broker is fresh (its JVM still compiling) and
 * this process is still optimising; both cost visibly more CPU for the first three rounds or so.
 * Then A and B counterbalanced (ABBA), so that what drift is left cancels.
 */
const WARM_UP = ['A', 'B', 'B', 'A'] as const;
const PLAN = ['A', 'B', 'B', 'A', 'A', 'B', 'B', 'A'] as const;
const PER_DESTINATION = 32;
const MAX_IN_FLIGHT = 2000;
/** Long enough that the dead destination's requests hang for the whole test and never time out. */
const DELIVERY_TIMEOUT_MS = 600_000;
const ROUND_TIMEOUT_MS = 60_000;
/** Draining a round (dead-lettering the dead destination's tasks, the sink catching up) on a busy machine. */
const SETTLE_TIMEOUT_MS = 120_000;
const ALLOWED_SLOWDOWN = 1.1;

type Scenario = 'A' | 'B';

interface RoundResult {
  round: string;
  scenario: Scenario;
  /** From the first send until H had all N events of the round. */
  healthyMs: number;
  /** healthyMs over ingestMs: how long H took, in units of the round's ingest time. */
  relative: number;
  /** From the first send until all 2N sends were accepted (202). */
  ingestMs: number;
  /** From the moment all 2N sends were accepted until H had its last event (negative when H was done first). */
  tailMs: number;
  /** Requests the other destination had received when H was complete. */
  otherRequests: number;
  /** deliveries.requested records the deliver stage had not committed when H was complete. */
  deliverLag: number;
  /** CPU time of this process (the service runs in it) during the round. */
  cpuMs: number;
  /** CPU time the whole machine (Kafka, other test runs, ...) was busy during the round. */
  machineBusyMs: number | undefined;
}

describe('destination isolation in delivery', () => {
  let svc: TestService;
  let healthy: Receiver;
  let arrivals: FirstArrivals;
  let healthyHook: string;
  let healthyDestination: string;
  let healthySent = 0;
  const receivers: Receiver[] = [];

  /** Distinct deliveries per destination that the sink has recorded an attempt of. */
  const attemptedPerDestination = async (): Promise<Map<string, number>> => {
    const rs = await svc.clickhouse.query({
      query: `SELECT destination_id, toUInt32(uniqExact(delivery_id)) AS n FROM ${svc.config.clickhouseDatabase}.deliveries WHERE tenant_id = {t:String} GROUP BY destination_id`,
      query_params: { t: svc.tenantId },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<{ destination_id: string; n: number | string }>();
    return new Map(rows.map((r) => [r.destination_id, Number(r.n)]));
  };

  /** Waits until every delivery so far was attempted and recorded and every stage is caught up. */
  const settle = async (expected: Record<string, number>) => {
    let got = new Map<string, number>();
    await eventually(
      `deliveries attempted ${JSON.stringify(expected)}`,
      async () => {
        got = await attemptedPerDestination();
        return Object.entries(expected).every(([id, n]) => (got.get(id) ?? 0) >= n) ? true : undefined;
      },
      SETTLE_TIMEOUT_MS,
      100,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; recorded ${JSON.stringify(Object.fromEntries(got))}; uncommitted ${JSON.stringify(await consumerLag(svc))}`);
    });
    await waitForIdle(svc, SETTLE_TIMEOUT_MS);
  };

  /** A destination with a `none` ingester routed to it. One attempt only: a failure is dead-lettered. */
  const placedDestination = async (name: string, url: string) => {
    const { destinationId, hookUrl } = await destinationWithIngester(svc, name, url, { retry_schedule_ms: [0] });
    return { destinationId, hookUrl };
  };

  const bodies = (round: string) => Array.from({ length: N }, (_, seq) => ({ round, seq, type: 'order.updated', data: { id: `ord_${round}_${seq}`, amount: seq * 7, note: 'x'.repeat(200) } }));

  /** One round: N events to H and N to a fresh fast (A) or dead (B) destination, concurrently. */
  const runRound = async (round: string, scenario: Scenario): Promise<RoundResult> => {
    const other = await startReceiver();
    receivers.push(other);
    if (scenario === 'B') other.respondBy(() => 'hang');
    const o = await placedDestination(`other ${round}`, other.url);
    const healthyBodies = bodies(round);
    const otherBodies = bodies(round);
    await new Promise((r) => setTimeout(r, 250));

    const cpu = process.cpuUsage();
    const machine = machineCpu();
    const started = Date.now();
    const sending = Promise.all([sendConcurrently(healthyHook, healthyBodies, SENDERS), sendConcurrently(o.hookUrl, otherBodies, SENDERS)]).then(() => Date.now());
    const healthyDone = await arrivals.waitForAll(round, N, ROUND_TIMEOUT_MS);
    const sent = await sending;
    const used = process.cpuUsage(cpu);
    const machineAfter = machineCpu();
    const otherRequests = other.requests.length;
    const lag = await consumerLag(svc);
    healthySent += N;
    const result: RoundResult = {
      round,
      scenario,
      healthyMs: healthyDone - started,
      relative: (healthyDone - started) / Math.max(1, sent - started),
      ingestMs: sent - started,
      tailMs: healthyDone - sent,
      otherRequests,
      deliverLag: lag[`deliver ${svc.service.topics.deliveryRequested.slice(svc.config.topicPrefix.length)}`] ?? 0,
      cpuMs: Math.round((used.user + used.system) / 1000),
      machineBusyMs: machine && machineAfter ? machineAfter.busyMs - machine.busyMs : undefined,
    };
    process.stderr.write(
      `isolation round ${round}: H complete in ${result.healthyMs} ms (all sends accepted after ${result.ingestMs} ms, tail ${result.tailMs} ms); ` +
        `other destination had ${otherRequests} requests, deliver stage ${result.deliverLag} records uncommitted; ` +
        `cpu this process ${result.cpuMs} ms, machine ${result.machineBusyMs ?? '?'} ms\n`,
    );

    if (scenario === 'A') {
      await other.waitForRequests(N, ROUND_TIMEOUT_MS);
    } else {
      // the dead destination held its requests the whole time: at most its concurrency limit
      // reached it and none was answered, and its unfinished tasks held the partition's commit
      expect(otherRequests).toBeGreaterThan(0);
      expect(otherRequests).toBeLessThanOrEqual(PER_DESTINATION);
      expect(result.deliverLag).toBeGreaterThanOrEqual(N);
      // drop its connections: the hanging attempts fail and open its breaker; deleting the
      // destination dead-letters the deliveries the breaker holds back as soon as they come back
      await other.close();
      expect((await svc.api('DELETE', `/v1/tenants/${svc.tenantId}/destinations/${o.destinationId}`)).status).toBe(204);
    }
    await settle({ [healthyDestination]: healthySent, [o.destinationId]: N });
    return result;
  };

  beforeAll(async () => {
    svc = await startTestService({
      DELIVERY_TIMEOUT_MS: String(DELIVERY_TIMEOUT_MS),
      DELIVERY_PER_DESTINATION: String(PER_DESTINATION),
      DELIVERY_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
      // held-back deliveries of a dead destination come back soon after it is deleted
      BREAKER_RESET_MS: '1000',
      // this is a load test of delivery isolation, not of ingest limits
      INGEST_RATE_LIMIT_PER_HOOK: 'off',
      INGEST_RATE_LIMIT_PER_TENANT: 'off',
    });
    healthy = await startReceiver();
    receivers.push(healthy);
    arrivals = new FirstArrivals(healthy);
    const h = await placedDestination('healthy', healthy.url);
    healthyHook = h.hookUrl;
    healthyDestination = h.destinationId;
  }, 90_000);

  afterAll(async () => {
    // closing the receivers first fails any hanging request, so the delivery stage can drain and stop
    await Promise.all(receivers.map((r) => r.close()));
    await svc?.stop();
  }, 60_000);

  it(`delivers to a healthy destination no more than ${Math.round((ALLOWED_SLOWDOWN - 1) * 100)}% slower while another never answers`, async () => {
    // in B the dead destination's N tasks stay in flight for the whole round (PER_DESTINATION
    // hanging, the rest queued per destination) and count against DELIVERY_MAX_IN_FLIGHT together
    // with H's; at that limit the stage stops fetching and H would starve as well
    expect(2 * N).toBeLessThan(MAX_IN_FLIGHT);

    for (const [i, scenario] of WARM_UP.entries()) await runRound(`w${i + 1}${scenario}`, scenario);
    const results: RoundResult[] = [];
    const of = (s: Scenario, f: (r: RoundResult) => number) => median(results.filter((r) => r.scenario === s).map(f));
    const ratio = () => of('B', (r) => r.relative) / of('A', (r) => r.relative);
    // a second set of rounds when the first is over the limit: other test files share the machine
    // and a burst of their load can land on B rounds; a real stall (H waiting for the dead
    // destination) costs several times the limit and shows in every set
    for (let set = 0; set < 2 && (set === 0 || ratio() > ALLOWED_SLOWDOWN); set++) {
      for (const [i, scenario] of PLAN.entries()) results.push(await runRound(`${set * PLAN.length + i + 1}${scenario}`, scenario));
    }

    // the delivery tasks of the test went to every partition
    const admin = svc.service.kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(svc.service.topics.deliveryRequested).finally(() => admin.disconnect());
    expect(offsets).toHaveLength(svc.config.kafkaPartitions);
    for (const o of offsets) expect(Number(o.high)).toBeGreaterThan(0);

    const medianA = of('A', (r) => r.relative);
    const medianB = of('B', (r) => r.relative);
    process.stderr.write(
      `isolation: N=${N} events per ingester and round; H complete after ${results.map((r) => `${r.round}=${r.healthyMs}/${r.ingestMs}`).join(' ')} ms (H complete/all accepted); ` +
        `median A (other fast) ${medianA.toFixed(3)}, median B (other dead) ${medianB.toFixed(3)}, B/A ${(medianB / medianA).toFixed(3)} (limit ${ALLOWED_SLOWDOWN}); ` +
        `median H complete A ${of('A', (r) => r.healthyMs)} ms, B ${of('B', (r) => r.healthyMs)} ms; ` +
        `median tail A ${of('A', (r) => r.tailMs)} ms, B ${of('B', (r) => r.tailMs)} ms; median cpu A ${of('A', (r) => r.cpuMs)} ms, B ${of('B', (r) => r.cpuMs)} ms\n`,
    );
    expect(medianB).toBeLessThanOrEqual(ALLOWED_SLOWDOWN * medianA);
  }, 900_000);
});
