import { ConfigError, loadConfig, parseRetention, RETENTION_BOUNDS } from '../../core/config';
import type { Tenant } from '../../core/model';
import { retentionOf } from '../../core/tenants';
import { topicNames } from '../../core/topics';
import { expiryOf, NEVER, withExpiry } from '../../pipeline/sink/expiry';
import { topology } from '../../service/topology';
import { randomKek } from '../support/keyring';

const KEK = { SECRETS_KEK: randomKek() };
const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig({ ...KEK, ...env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('retention settings', () => {
  it.each([
    ['30d', 30 * 86_400],
    ['12h', 43_200],
    ['90s', 90],
    ['15m', 900],
    ['1s', 1],
    [' 7D ', 7 * 86_400],
    ['3650d', RETENTION_BOUNDS.max],
    ['forever', null],
    ['FOREVER', null],
  ])('reads %j as %j seconds', (text, seconds) => {
    expect(parseRetention(text)).toEqual({ seconds });
  });

  it.each([['0s'], ['3651d'], ['87601h'], ['30'], ['1w'], ['-5d'], ['1.5d'], ['d'], [''], ['never']])('refuses %j', (text) => {
    expect(parseRetention(text).error).toMatch(/expected a duration|must be from 1s to 3650d/);
  });

  it('defaults to 30 days of bodies, 90 of attempts, 30 of logs, a sweep an hour, the broker\'s topic retention', () => {
    const c = loadConfig(KEK);
    expect(c.retention).toEqual({ bodiesSeconds: 30 * 86_400, attemptsSeconds: 90 * 86_400, logsSeconds: 30 * 86_400 });
    expect(c.retentionSweepSeconds).toBe(3_600);
    expect(c.kafkaEventRetentionMs).toBeUndefined();
    const set = loadConfig({ ...KEK, RETENTION_BODIES: '12h', RETENTION_ATTEMPTS: 'forever', RETENTION_LOGS: '90s', RETENTION_SWEEP_SECONDS: '0', KAFKA_EVENT_RETENTION: '3d' });
    expect(set.retention).toEqual({ bodiesSeconds: 43_200, attemptsSeconds: null, logsSeconds: 90 });
    expect(set.retentionSweepSeconds).toBe(0);
    expect(set.kafkaEventRetentionMs).toBe(3 * 86_400_000);
    expect(loadConfig({ ...KEK, KAFKA_EVENT_RETENTION: 'forever' }).kafkaEventRetentionMs).toBe(-1);
  });

  it('reports every wrong retention at once, by name', () => {
    const problems = problemsOf({ RETENTION_BODIES: '0s', RETENTION_ATTEMPTS: '11y', RETENTION_LOGS: '4000d', RETENTION_SWEEP_SECONDS: '-1', KAFKA_EVENT_RETENTION: '30m' });
    expect(problems).toEqual(expect.arrayContaining([
      expect.stringMatching(/^RETENTION_BODIES: must be from 1s to 3650d/),
      expect.stringMatching(/^RETENTION_ATTEMPTS: expected a duration such as 30d/),
      expect.stringMatching(/^RETENTION_LOGS: must be from 1s to 3650d/),
      expect.stringMatching(/^RETENTION_SWEEP_SECONDS: must be between 0 and 604800/),
      expect.stringMatching(/^KAFKA_EVENT_RETENTION: must be at least 1h/),
    ]));
    expect(problems).toHaveLength(5);
  });

  it("takes a tenant's own periods member by member, the deployment's for the rest", () => {
    const deployment = { bodiesSeconds: 100, attemptsSeconds: 200, logsSeconds: null };
    const tenant = (retention: NonNullable<Tenant['limits']>['retention']): Tenant => ({ kind: 'tenant', id: 't', name: 't', created_at: '', limits: { retention } });
    expect(retentionOf(undefined, deployment)).toEqual(deployment);
    expect(retentionOf(tenant(null), deployment)).toEqual(deployment);
    expect(retentionOf(tenant({ bodies_seconds: 5, logs_seconds: 7 }), deployment)).toEqual({ bodiesSeconds: 5, attemptsSeconds: 200, logsSeconds: 7 });
    expect(retentionOf(tenant({ attempts_seconds: null }), deployment)).toEqual(deployment);
  });

  it('gives each sink row its expiry columns, counted from the time it records', () => {
    const at = Date.UTC(2026, 10, 27, 12, 0, 0, 250);
    const periods = () => ({ bodiesSeconds: 60, attemptsSeconds: 3_600, logsSeconds: null });
    const atS = Math.ceil(at / 1_000);
    expect(expiryOf(at, 60)).toBe(atS + 60);
    expect(expiryOf(at, null)).toBe(NEVER);
    expect(expiryOf(at, RETENTION_BOUNDS.max * 100)).toBe(NEVER);
    expect(withExpiry('events', { tenant_id: 'a' }, at, periods)).toEqual({ tenant_id: 'a', body_expires_at: atS + 60, expires_at: atS + 3_600 });
    expect(withExpiry('deliveries', { tenant_id: 'a' }, at, periods)).toEqual({ tenant_id: 'a', body_expires_at: atS + 60, expires_at: atS + 3_600 });
    expect(withExpiry('dead_letters', { tenant_id: 'a' }, at, periods)).toEqual({ tenant_id: 'a', body_expires_at: atS + 60, expires_at: atS + 3_600 });
    expect(withExpiry('event_transitions', { tenant_id: 'a' }, at, periods)).toEqual({ tenant_id: 'a', expires_at: atS + 3_600 });
    expect(withExpiry('logs', { tenant_id: 'a' }, at, periods)).toEqual({ tenant_id: 'a', expires_at: NEVER });
    // the evidence log and the configuration's history are never expired
    expect(withExpiry('evidence_leaves', { tenant_id: 'a' }, at, periods)).toEqual({ tenant_id: 'a' });
    expect(withExpiry('destination_changes', { tenant_id: 'a' }, at, periods)).toEqual({ tenant_id: 'a' });
  });

  it('sets KAFKA_EVENT_RETENTION on the topics that carry bodies, and on no other', () => {
    const topics = topicNames('x.');
    const { specs } = topology(topics, 3, 1_048_576, 86_400_000);
    const kept = new Map(specs.map((s) => [s.topic, s.retentionMs]));
    for (const t of [topics.received, topics.validated, topics.filtered, topics.deliveryRequested, topics.deliveryCompleted, topics.deliveryDlq, topics.deliveryHeld, topics.eventsDlq, ...topics.retryTiers.map((r) => r.topic)]) expect(kept.get(t)).toBe(86_400_000);
    expect(kept.get(topics.evidenceLeaves)).toBe(-1);
    expect(kept.get(topics.config)).toBeUndefined();
    expect(kept.get(topics.logs)).toBeUndefined();
    expect(topology(topics, 3, 1_048_576).specs.find((s) => s.topic === topics.received)?.retentionMs).toBeUndefined();
  });
});
