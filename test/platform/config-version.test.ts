import type { Destination } from '../../core/model';
import { newId } from '../../core/ids';
import { AvroCodec } from '../../platform/avro/codec';
import { createKafka, ensureTopics } from '../../platform/kafka/client';
import { ConfigStore } from '../../platform/config-store/config-store';
import { randomKeyring } from '../support/keyring';
import { uniqueSuffix } from '../support/ids';

function destination(tenantId: string): Destination {
  const now = new Date().toISOString();
  return { kind: 'destination', id: newId('destination'), tenant_id: tenantId, name: 'd', url: 'https://example.com/', status: 'active', signing_secret: 'whsec_x', disabled_reason: null, retry_schedule_ms: null, created_at: now, updated_at: now };
}

/** The configuration version: the offset of the config topic's one partition a store has applied through. */
describe('configuration version', () => {
  const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'config-version-test', { quiet: true });
  const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
  const keyring = randomKeyring();
  let topic: string;
  const stores: ConfigStore[] = [];
  const store = async (start = true) => {
    const s = new ConfigStore(kafka, codec, topic, keyring);
    stores.push(s);
    if (start) await s.start();
    return s;
  };

  beforeEach(async () => {
    topic = `config-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 1, compacted: true }]);
    await codec.register({ [topic]: 'ConfigEntry' });
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.stop()));
  });

  it('moves with every write, is at least the written offset when the write resolves, and each entity knows its own', async () => {
    const writer = await store();
    expect(writer.version).toBe(-1n);
    const a = destination('t1');
    await writer.put(a);
    const atA = writer.versionOf('destination', 't1', a.id)!;
    expect(atA).toBe(0n);
    expect(writer.version).toBeGreaterThanOrEqual(atA);
    const b = destination('t1');
    await writer.put(b);
    const atB = writer.versionOf('destination', 't1', b.id)!;
    expect(atB).toBeGreaterThan(atA);
    expect(writer.version).toBeGreaterThanOrEqual(atB);
    expect(await writer.update({ ...a, status: 'disabled' })).toBe(true);
    const updated = writer.versionOf('destination', 't1', a.id)!;
    expect(updated).toBeGreaterThan(atB);
    expect(writer.version).toBeGreaterThanOrEqual(updated);
    await writer.remove('destination', 't1', b.id);
    expect(writer.versionOf('destination', 't1', b.id)).toBeUndefined();
    expect(writer.version).toBeGreaterThan(updated);

    // a reader from the start reaches the same version and the same per-entity versions
    const reader = await store();
    expect(reader.version).toBe(writer.version);
    expect(reader.versionOf('destination', 't1', a.id)).toBe(updated);
  });

  it('waits for a version: at once when applied, until another process writes it, or false after the timeout', async () => {
    const writer = await store();
    await writer.put(destination('t1'));
    const other = await store();
    expect(await other.waitForVersion(writer.version, 1)).toBe(true);

    const next = writer.version + 1n;
    const waiting = other.waitForVersion(next, 20_000);
    const d = destination('t1');
    await writer.put(d);
    expect(await waiting).toBe(true);
    expect(other.version).toBeGreaterThanOrEqual(next);
    // what the version covers is visible once it is reached
    expect(other.get('destination', 't1', d.id)).toBeDefined();

    const started = Date.now();
    expect(await other.waitForVersion(other.version + 100n, 300)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('lets a store that starts late catch up to a version asked of it before it started', async () => {
    const writer = await store();
    const d = destination('t1');
    await writer.put(d);
    const late = await store(false);
    expect(late.version).toBe(-1n);
    const waiting = late.waitForVersion(writer.version, 20_000);
    await late.start();
    expect(await waiting).toBe(true);
    expect(late.get('destination', 't1', d.id)).toBeDefined();
  });
});
