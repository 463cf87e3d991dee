import { ackedRow, chTime, deliveredRow, stateRow } from '../../pipeline/sink/rows';

/** The sink's DateTime64(3) text, kept per second, is what the ISO form of the same instant says. */
describe('ClickHouse time text', () => {
  const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

  it('matches the ISO form for runs within one second, across seconds, and at random instants', () => {
    const base = Date.UTC(2026, 10, 23, 14, 5, 9, 0);
    const instants = [
      0, 1, 9, 10, 99, 100, 999, 1_000, 86_399_999,
      ...Array.from({ length: 3_000 }, (_, i) => base + i * 7),
      ...Array.from({ length: 3_000 }, () => Math.floor(Math.random() * 4e12)),
    ];
    for (const ms of instants) expect(chTime(ms)).toBe(iso(ms));
  });
});

describe('the delivered transition from an outcome', () => {
  it('is the outcome of a delivered attempt, at the end of the attempt, with its delivery and destination', () => {
    const outcome = { delivery_id: 'dlv_1', event_id: 'evt_1', tenant_id: 't', destination_id: 'dst_1', correlation_id: 'cor_1', attempt_number: 2, status: 'delivered' as const, response_code: 200, attempted_at: Date.UTC(2026, 10, 25, 12, 0, 0, 0), duration_ms: 250, error_message: null, body_sha256: 'x', next_attempt_at: null };
    expect(deliveredRow(outcome)).toEqual({ tenant_id: 't', event_id: 'evt_1', ingester_id: '', state: 'delivered', at: '2026-11-25 12:00:00.250', correlation_id: 'cor_1', reason: null, delivery_id: 'dlv_1', destination_id: 'dst_1' });
  });
});

describe('the validated and filtered transitions from the stages\' event records', () => {
  it('are the event, in the named state, at the record\'s Kafka time, with no delivery', () => {
    const event = { event_id: 'evt_2', tenant_id: 't', ingester_id: 'ing_1', correlation_id: 'cor_2' } as unknown as Parameters<typeof stateRow>[0];
    const at = Date.UTC(2026, 10, 25, 12, 0, 1, 5);
    expect(stateRow(event, 'validated', at)).toEqual({ tenant_id: 't', event_id: 'evt_2', ingester_id: 'ing_1', state: 'validated', at: '2026-11-25 12:00:01.005', correlation_id: 'cor_2', reason: null, delivery_id: '', destination_id: '' });
    expect(stateRow(event, 'filtered', at).state).toBe('filtered');
  });
});

describe('the acked transition from a sealed batch', () => {
  it('is each delivered leaf at the batch\'s seal time, so a batch read twice gives the same rows', () => {
    const leaf = { event_id: 'evt_3', tenant_id: 't', correlation_id: 'cor_3', delivery_id: 'dlv_3', destination_id: 'dst_3' } as unknown as Parameters<typeof ackedRow>[0];
    const sealedAt = Date.UTC(2026, 10, 25, 12, 0, 2, 0);
    const row = ackedRow(leaf, sealedAt);
    expect(row).toEqual({ tenant_id: 't', event_id: 'evt_3', ingester_id: '', state: 'acked', at: '2026-11-25 12:00:02.000', correlation_id: 'cor_3', reason: null, delivery_id: 'dlv_3', destination_id: 'dst_3' });
    expect(ackedRow(leaf, sealedAt)).toEqual(row);
  });
});
