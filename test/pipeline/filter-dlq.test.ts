import { AvroCodec } from '../../platform/avro/codec';
import type { DeadLetter, WebhookEvent } from '../../platform/avro/records';
import { waitForStates } from '../support/flow';
import { eventually, startTestService, type TestService } from '../support/service';
import { readTopic, type StoredRecord as RawRecord } from '../../platform/kafka/topic-table';

/**
 * Events the filters cannot judge within their bounds (a body larger than FILTER_MAX_BODY_BYTES,
 * nested deeper than FILTER_MAX_JSON_DEPTH, filters stored before they became invalid) end on
 * events.dlq with their reason and original bytes, and as failed + dlq_queued, while the event
 * of the same ingester behind them still passes: the partition goes on.
 */
describe('filter stage dead letters', () => {
  let svc: TestService;
  let codec: AvroCodec;

  beforeAll(async () => {
    svc = await startTestService();
    codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  });
  afterAll(async () => {
    await svc?.stop();
  });

  const hookOf = (id: string) => `${svc.url}/v1/hooks/${id}`;
  const post = async (hook: string, body: string, headers: Record<string, string> = {}): Promise<string> => {
    const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    expect(res.status).toBe(202);
    return ((await res.json()) as { event_id: string }).event_id;
  };

  /** The dead letters of these events, once all are on events.dlq, decoded, with the records they came from. */
  async function deadLettersOf(eventIds: string[]): Promise<Map<string, { letter: DeadLetter; source: RawRecord }>> {
    const letters = await eventually('the dead letters on events.dlq', async () => {
      const found = new Map<string, DeadLetter>();
      for (const r of await readTopic(svc.service.kafka, svc.service.topics.eventsDlq)) {
        const letter = await codec.decode('DeadLetter', r.value!);
        if (letter.event_id && eventIds.includes(letter.event_id)) found.set(letter.event_id, letter);
      }
      return found.size === eventIds.length ? found : undefined;
    });
    // filter runs chained after validate: its input record is the webhook as received
    const received = await readTopic(svc.service.kafka, svc.service.topics.received);
    const out = new Map<string, { letter: DeadLetter; source: RawRecord }>();
    for (const [id, letter] of letters) {
      const source = received.find((r) => r.partition === letter.source_partition && r.offset === String(letter.source_offset));
      if (!source) throw new Error(`no record at ${letter.source_partition}/${letter.source_offset} of webhooks.received`);
      out.set(id, { letter, source });
    }
    return out;
  }

  it('sets aside a body too large or too deep for a body rule, and lets the next event of the ingester pass', async () => {
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, {
      // ordered: its events share one partition, so the normal one sits behind the two set aside
      name: 'bounded body', provider: 'none', config: {}, ordered: true,
      filters: [{ type: 'body', path: 'kind', op: 'equals', value: 'ok' }],
    });
    expect(ing.status).toBe(201);
    const hook = hookOf(ing.body.id);
    // defaults: 262144 bytes, 32 levels
    const large = JSON.stringify({ kind: 'ok', pad: 'x'.repeat(300_000) });
    const deep = `{"kind":"ok","d":${'['.repeat(40)}${']'.repeat(40)}}`;
    const largeId = await post(hook, large);
    const deepId = await post(hook, deep);
    const normalId = await post(hook, JSON.stringify({ kind: 'ok' }));

    // one ingester, one key, one partition: the normal event passed behind the two set aside
    await waitForStates(svc, normalId, ['validated', 'filtered']);
    const largeRows = await waitForStates(svc, largeId, ['validated', 'failed', 'dlq_queued']);
    const deepRows = await waitForStates(svc, deepId, ['validated', 'failed', 'dlq_queued']);
    const largeReason = `filter not evaluated: rule 0: body is ${Buffer.byteLength(large)} bytes, more than the 262144 a body rule reads (FILTER_MAX_BODY_BYTES)`;
    const deepReason = 'filter not evaluated: rule 0: body nests arrays and objects more than 32 levels deep, the most a body rule reads (FILTER_MAX_JSON_DEPTH)';
    for (const [rows, reason] of [[largeRows, largeReason], [deepRows, deepReason]] as const) {
      expect(rows.map((r) => r.state)).not.toContain('filtered');
      expect(rows.filter((r) => r.state === 'failed' || r.state === 'dlq_queued').map((r) => r.reason)).toEqual([reason, reason]);
    }

    const letters = await deadLettersOf([largeId, deepId]);
    for (const [id, body, reason] of [[largeId, large, largeReason], [deepId, deep, deepReason]] as const) {
      const { letter, source } = letters.get(id)!;
      expect(letter).toMatchObject({ stage: 'filter', reason, source_topic: svc.service.topics.received, tenant_id: svc.tenantId, event_id: id });
      expect(letter.at).toBeGreaterThan(Date.now() - 120_000);
      // the exact bytes and key consumed, which still decode to the event as it arrived
      expect(letter.value.equals(source.value!)).toBe(true);
      expect(letter.key?.toString()).toBe(`${svc.tenantId}/${ing.body.id}`);
      expect(letter.key!.equals(source.key!)).toBe(true);
      // the service's codec opens the body, sealed on Kafka with the tenant's data key
      const event = await svc.service.apiServices!.replay.codec.decode('WebhookEvent', letter.value);
      expect(event.event_id).toBe(id);
      expect(event.body.toString()).toBe(body);
    }
  });

  it('sets aside events under stored filters that no longer compile, and a header too long for a pattern', async () => {
    const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, {
      name: 'stored before', provider: 'none', config: {},
      filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t' }],
    });
    expect(ing.status).toBe(201);
    const hook = hookOf(ing.body.id);
    const longId = await post(hook, '{}', { 'x-tag': `t${'a'.repeat(9_000)}` });
    const okId = await post(hook, '{}', { 'x-tag': 'tag' });
    await waitForStates(svc, okId, ['filtered']);
    const longRows = await waitForStates(svc, longId, ['failed', 'dlq_queued']);
    expect(longRows.find((r) => r.state === 'failed')!.reason).toBe('filter not evaluated: rule 0: header x-tag carries 9001 bytes, more than the 8192 a matches rule reads (FILTER_MAX_HEADER_BYTES)');

    // a lookahead written to the config topic the way an older version could store it
    const stored = svc.service.store.get('ingester', svc.tenantId, ing.body.id)!;
    await svc.service.store.put({ ...stored, filters: [{ type: 'header', name: 'x-tag', op: 'matches', pattern: '^t(?=a)' }] });
    const heldId = await post(hook, '{}', { 'x-tag': 'ta' });
    const heldRows = await waitForStates(svc, heldId, ['failed', 'dlq_queued']);
    expect(heldRows.map((r) => r.state)).not.toContain('filtered');
    expect(heldRows.find((r) => r.state === 'dlq_queued')!.reason).toMatch(/^filter not evaluated: the ingester's filters are invalid: filters\[0\]\.pattern is not a valid RE2 regular expression/);

    const letters = await deadLettersOf([longId, heldId]);
    const decoded: WebhookEvent = await codec.decodeStored('WebhookEvent', letters.get(heldId)!.letter.value);
    expect(decoded.headers).toContainEqual({ name: 'x-tag', value: 'ta' });
  });
});
