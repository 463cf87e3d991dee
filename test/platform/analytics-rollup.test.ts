import type { ClickHouseClient } from '@clickhouse/client';
import { ANALYTICS_GROUP_BY, deliveryAnalytics, MAX_GROUPS, type AnalyticsBucket, type AnalyticsGroupBy, type AnalyticsQuery } from '../../platform/clickhouse/analytics';
import { rollUpAnalytics } from '../../platform/clickhouse/analytics-rollup';
import { startTestService, type TestService } from '../support/service';
import { uniqueSuffix } from '../support/ids';

/**
 * The rollup of stored attempts into the analytics views (migration 016), on the service's own
 * embedded ClickHouse: hour and day answers from the views equal the answers computed from the
 * attempts once rolled up, and not before; a second rollup adds nothing; attempts stored within
 * the lag wait for a later one; a step cut short is done again without counting anything twice;
 * tenants being erased are left out; every group_by, with every filter and with more groups than
 * an answer lists, answers from the views as from the attempts.
 */
/** The client with one method replaced (`make` gets the client itself), the others as they are. */
function withMethod<K extends keyof ClickHouseClient>(client: ClickHouseClient, name: K, make: (target: ClickHouseClient) => ClickHouseClient[K]): ClickHouseClient {
  const replaced = make(client);
  return new Proxy(client, {
    get(target, prop) {
      if (prop === name) return replaced;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('the analytics rollup', () => {
  let svc: TestService;
  let db: string;
  const tenantA = `tenant-ra-${uniqueSuffix()}`;
  const tenantB = `tenant-rb-${uniqueSuffix()}`;
  const tenantC = `tenant-rc-${uniqueSuffix()}`;
  const HOUR = 3_600_000;

  beforeAll(async () => {
    // the service's own rollup would run beside these calls: an hour apart, it does not
    svc = await startTestService({ ANALYTICS_ROLLUP_SECONDS: '3600' });
    db = svc.config.clickhouseDatabase;
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
  });

  /** `n` attempts of a tenant over the last two hours: 4 destinations, 3 types, 10% retrying with an error, latencies 20..219 ms. */
  const store = async (tenant: string, n: number, offset: number) => {
    const end = Date.now();
    await svc.clickhouse.command({
      query: `INSERT INTO ${db}.deliveries (tenant_id, delivery_id, attempt_number, event_id, destination_id, correlation_id, status, response_code, attempted_at, duration_ms, error_message, body_sha256, next_attempt_at, event_type, ingester_id, received_at)
              SELECT {tenant:String}, concat('dlv_', toString(number + {offset:UInt64})), 1, concat('evt_', toString(number + {offset:UInt64})), concat('dst_', toString(number % 4)), 'cor',
                     if(number % 10 = 0, 'retrying', 'delivered'), if(number % 10 = 0, 503, 200),
                     fromUnixTimestamp64Milli(toInt64({end:Int64} - intDiv(number * ${2 * HOUR}, {n:UInt64})), 'UTC') AS at, toUInt32(20 + number % 200),
                     if(number % 10 = 0, 'HTTP 503', NULL), 'ab', NULL, concat('type.', toString(number % 3)), 'ing_1', at - toIntervalMillisecond(150)
              FROM numbers({n:UInt64})`,
      query_params: { tenant, offset, end, n },
    });
  };

  const query = (tenant: string, bucket: AnalyticsBucket, groupBy: AnalyticsGroupBy | null): AnalyticsQuery => {
    const width = bucket === 'day' ? 24 * HOUR : HOUR;
    const toMs = Math.ceil((Date.now() + 1) / width) * width;
    return { tenant, fromMs: toMs - 3 * width, toMs, bucket, groupBy, destinationId: null, eventType: null, destinationIds: null };
  };

  /** The views' answers and the attempts' own, for hour and day buckets, ungrouped and by destination and by code. */
  const answers = async (client: ClickHouseClient, tenant: string) => {
    const out: { view: unknown; raw: unknown; attempts: number }[] = [];
    for (const bucket of ['hour', 'day'] as const) {
      for (const groupBy of [null, 'destination', 'response_code'] as const) {
        const q = query(tenant, bucket, groupBy);
        const view = await deliveryAnalytics(client, db, q);
        out.push({ view, raw: await deliveryAnalytics(client, db, q, 'raw'), attempts: view.totals.attempts });
      }
    }
    return out;
  };

  it('counts nothing before a rollup, and exactly the attempts after it; a second adds nothing', async () => {
    await store(tenantA, 500, 0);
    const before = await answers(svc.clickhouse, tenantA);
    expect(before.map((a) => a.attempts)).toEqual([0, 0, 0, 0, 0, 0]);
    expect((before[0]!.raw as { totals: { attempts: number } }).totals.attempts).toBe(500);

    const first = await rollUpAnalytics(svc.clickhouse, db, { lagMs: 0 });
    expect(first.steps.length).toBeGreaterThanOrEqual(1);
    const after = await answers(svc.clickhouse, tenantA);
    for (const a of after) expect(a.view).toEqual(a.raw);
    expect(after.map((a) => a.attempts)).toEqual([500, 500, 500, 500, 500, 500]);

    const second = await rollUpAnalytics(svc.clickhouse, db, { lagMs: 0 });
    expect(second.rolledToMs).toBeGreaterThanOrEqual(first.rolledToMs);
    expect(await answers(svc.clickhouse, tenantA)).toEqual(after);
  });

  it('leaves the attempts stored within the lag to a later rollup', async () => {
    await store(tenantA, 100, 10_000);
    const held = await rollUpAnalytics(svc.clickhouse, db, { lagMs: 600_000 });
    expect(held.steps).toEqual([]);
    expect((await answers(svc.clickhouse, tenantA)).map((a) => a.attempts)).toEqual([500, 500, 500, 500, 500, 500]);
    await rollUpAnalytics(svc.clickhouse, db, { lagMs: 0 });
    const after = await answers(svc.clickhouse, tenantA);
    for (const a of after) expect(a.view).toEqual(a.raw);
    expect(after[0]!.attempts).toBe(600);
  });

  it('does a step cut short again with the same window, and counts nothing twice', async () => {
    await store(tenantA, 200, 20_000);
    // ClickHouse fails the step's second insert (the day view) once: the hour view has its rows, the step is not done
    let failed = false;
    const failing = withMethod(svc.clickhouse, 'command', (target) => async (params: Parameters<ClickHouseClient['command']>[0]) => {
      if (!failed && params.query.includes(`INSERT INTO ${db}.delivery_days`)) {
        failed = true;
        throw new Error('the server went away');
      }
      return target.command(params);
    });
    await expect(rollUpAnalytics(failing, db, { lagMs: 0 })).rejects.toThrow('the server went away');
    const again = await rollUpAnalytics(svc.clickhouse, db, { lagMs: 0 });
    expect(again.steps[0]).toMatchObject({ redone: true });
    const after = await answers(svc.clickhouse, tenantA);
    for (const a of after) expect(a.view).toEqual(a.raw);
    expect(after[0]!.attempts).toBe(800);
  });

  it('leaves out the attempts of tenants it is told to skip (being erased)', async () => {
    await store(tenantB, 50, 0);
    await store(tenantA, 10, 30_000);
    await rollUpAnalytics(svc.clickhouse, db, { lagMs: 0, skipped: [tenantB] });
    expect((await answers(svc.clickhouse, tenantB)).map((a) => a.attempts)).toEqual([0, 0, 0, 0, 0, 0]);
    expect((await answers(svc.clickhouse, tenantA))[0]!.attempts).toBe(810);
  });
  it('answers every group_by from the views as from the attempts, filtered, limited to a key\'s destinations, and with more groups than it lists', async () => {
    // 60 destinations (more than MAX_GROUPS), 5 types, 3 ingesters, codes 200, 404 and 503
    const n = 3_000;
    const end = Date.now();
    await svc.clickhouse.command({
      query: `INSERT INTO ${db}.deliveries (tenant_id, delivery_id, attempt_number, event_id, destination_id, correlation_id, status, response_code, attempted_at, duration_ms, error_message, body_sha256, next_attempt_at, event_type, ingester_id, received_at)
              SELECT {tenant:String}, concat('dlv_', toString(number)), 1, concat('evt_', toString(number)), concat('dst_', toString(number % 60)), 'cor',
                     multiIf(number % 10 = 0, 'retrying', number % 7 = 0, 'failed', 'delivered'), multiIf(number % 10 = 0, 503, number % 7 = 0, 404, 200),
                     fromUnixTimestamp64Milli(toInt64({end:Int64} - intDiv(number * ${2 * HOUR}, {n:UInt64})), 'UTC') AS at, toUInt32(5 + number % 300),
                     if(number % 10 = 0 OR number % 7 = 0, concat('HTTP ', toString(number % 3)), NULL), 'ab', NULL, concat('type.', toString(number % 5)), concat('ing_', toString(number % 3)), at - toIntervalMillisecond(40 + number % 90)
              FROM numbers({n:UInt64})`,
      query_params: { tenant: tenantC, end, n },
    });
    await rollUpAnalytics(svc.clickhouse, db, { lagMs: 0 });
    const filters: Pick<AnalyticsQuery, 'destinationId' | 'eventType' | 'destinationIds'>[] = [
      { destinationId: null, eventType: null, destinationIds: null },
      { destinationId: 'dst_7', eventType: null, destinationIds: null },
      { destinationId: null, eventType: 'type.2', destinationIds: null },
      { destinationId: null, eventType: null, destinationIds: ['dst_1', 'dst_2', 'dst_3'] },
      { destinationId: 'dst_2', eventType: 'type.2', destinationIds: ['dst_1', 'dst_2'] },
    ];
    let folded = 0;
    for (const bucket of ['hour', 'day'] as const) {
      for (const groupBy of [null, ...ANALYTICS_GROUP_BY]) {
        for (const f of filters) {
          const q = { ...query(tenantC, bucket, groupBy), ...f };
          const view = await deliveryAnalytics(svc.clickhouse, db, q);
          expect({ bucket, groupBy, ...f, answer: view }).toEqual({ bucket, groupBy, ...f, answer: await deliveryAnalytics(svc.clickhouse, db, q, 'raw') });
          if (view.groups?.some((g) => g.other)) folded++;
        }
      }
    }
    // the unfiltered answers by destination, in both buckets, list MAX_GROUPS and fold the rest
    expect(folded).toBe(2);
    const byDestination = await deliveryAnalytics(svc.clickhouse, db, query(tenantC, 'day', 'destination'));
    expect(byDestination.groupsTotal).toBe(60);
    expect(byDestination.groups!.filter((g) => !g.other)).toHaveLength(MAX_GROUPS);
    // `other` listed last (the order by size: test/api/analytics.test.ts), each group's buckets in time order
    const listed = byDestination.groups!;
    expect(listed.map((g) => g.other)).toEqual([...Array(MAX_GROUPS).fill(false), true]);
    for (const g of listed) expect(g.buckets.map((b) => b.startMs)).toEqual([...g.buckets.map((b) => b.startMs)].sort((a, b) => a - b));
    expect(byDestination.totals.attempts).toBe(n);
  });

  it('asks for the figures unfolded while a group_by has at most MAX_GROUPS groups, and lists the groups first after an answer with more', async () => {
    // 60 destinations (more than MAX_GROUPS), each with an attempt in each of 3 hours, and 3 types
    const tenantD = `tenant-rd-${uniqueSuffix()}`;
    await svc.clickhouse.command({
      query: `INSERT INTO ${db}.deliveries (tenant_id, delivery_id, attempt_number, event_id, destination_id, correlation_id, status, response_code, attempted_at, duration_ms, error_message, body_sha256, next_attempt_at, event_type, ingester_id, received_at)
              SELECT {tenant:String}, concat('dlv_', toString(number)), 1, concat('evt_', toString(number)), concat('dst_', toString(number % 60)), 'cor', 'delivered', 200,
                     fromUnixTimestamp64Milli(toInt64({end:Int64} - intDiv(number, 60) * ${HOUR}), 'UTC') AS at, toUInt32(10 + number), NULL, 'ab', NULL,
                     concat('type.', toString(number % 3)), 'ing_1', at - toIntervalMillisecond(40)
              FROM numbers(180)`,
      query_params: { tenant: tenantD, end: Date.now() },
    });
    await rollUpAnalytics(svc.clickhouse, db, { lagMs: 0 });
    let queries = 0;
    const counting = withMethod(svc.clickhouse, 'query', (target) => (params: Parameters<ClickHouseClient['query']>[0]) => (queries++, target.query(params)));
    const answer = async (q: AnalyticsQuery) => {
      queries = 0;
      const a = await deliveryAnalytics(counting, db, q);
      return { a, queries };
    };
    const byDestination = query(tenantD, 'hour', 'destination');

    // 3 groups: the figures (unfolded) and the top errors
    const byType = await answer(query(tenantD, 'hour', 'event_type'));
    expect(byType).toMatchObject({ queries: 2, a: { groupsTotal: 3 } });
    expect(byType.a.groups!.some((g) => g.other)).toBe(false);
    // 60 groups, asked for the first time: the unfolded figures come back bounded (more rows than
    // an answer of MAX_GROUPS has), then the groups, then the folded figures
    const first = await answer(byDestination);
    expect(first.queries).toBe(4);
    const exact = await deliveryAnalytics(svc.clickhouse, db, byDestination, 'raw');
    expect(exact.groupsTotal).toBe(60);
    expect(first.a).toEqual(exact);
    expect(first.a.groups!.filter((g) => g.other)).toHaveLength(1);
    // the next answer for that group_by lists the groups first
    const next = await answer(byDestination);
    expect(next).toEqual({ a: exact, queries: 3 });
    // a key's three destinations: the groups first, then nothing folds, and the answer after tries unfolded again
    const three = await answer({ ...byDestination, destinationIds: ['dst_1', 'dst_2', 'dst_3'] });
    expect(three).toMatchObject({ queries: 3, a: { groupsTotal: 3 } });
    expect(three.a.groups!.map((g) => g.key)).toEqual(['dst_1', 'dst_2', 'dst_3']);
    expect((await answer(byDestination)).queries).toBe(4);
  });
});
