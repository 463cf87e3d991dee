import { ackedRow, chTime, deliveredRow, outcomeLogRow, stateRow } from '../../pipeline/sink/rows';

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

describe('the log line of an attempt from its outcome', () => {
  const base = { delivery_id: 'dlv_4', event_id: 'evt_4', tenant_id: 't', destination_id: 'dst_4', correlation_id: 'cor_4', attempt_number: 1, response_code: 500, attempted_at: Date.UTC(2026, 10, 25, 12, 0, 0, 0), duration_ms: 20, body_sha256: 'x' };

  it('says what the deliver stage printed: level, message, ids and fields, at the end of the attempt', () => {
    const retry = outcomeLogRow({ ...base, status: 'retrying', error_message: 'the destination answered 500', next_attempt_at: Date.UTC(2026, 10, 25, 12, 0, 5, 0) });
    expect(retry).toMatchObject({ tenant_id: 't', level: 'info', message: 'attempt failed; retry scheduled', stage: 'deliver', ts: '2026-11-25 12:00:00.020', event_id: 'evt_4', delivery_id: 'dlv_4', destination_id: 'dst_4', correlation_id: 'cor_4' });
    expect(JSON.parse(retry.fields)).toEqual({ attempt: 1, response_code: 500, duration_ms: 20, reason: 'the destination answered 500', next_attempt_at: '2026-11-25T12:00:05.000Z' });
    const dead = outcomeLogRow({ ...base, attempt_number: 2, status: 'failed', error_message: 'retries exhausted', next_attempt_at: null });
    expect([dead.level, dead.message, JSON.parse(dead.fields).reason]).toEqual(['warn', 'delivery failed for good; dead-lettered', 'retries exhausted']);
    const ok = outcomeLogRow({ ...base, attempt_number: 3, status: 'delivered', response_code: 200, error_message: null, next_attempt_at: null });
    expect([ok.level, ok.message, JSON.parse(ok.fields)]).toEqual(['info', 'delivered', { attempt: 3, response_code: 200, duration_ms: 20 }]);
  });

  it('has an id of its own per attempt, the same each time the outcome is read', () => {
    const a = { ...base, status: 'delivered' as const, error_message: null, next_attempt_at: null };
    expect(outcomeLogRow(a).id).toBe(outcomeLogRow(a).id);
    expect(outcomeLogRow(a).id).toMatch(/^log_[0-9a-z]{26}$/);
    expect(outcomeLogRow({ ...a, attempt_number: 2 }).id).not.toBe(outcomeLogRow(a).id);
  });
});
