import { parseKeyring } from '../core/secrets/keyring';
import { AvroCodec } from '../platform/avro/codec';
import { ConfigStore } from '../platform/config-store/config-store';
import { randomKek } from './support/keyring';
import { runScript } from './support/process';
import { startTestService, type TestService } from './support/service';

/**
 * Key rotation through the CLI, against a running service: the new key first, the old after it,
 * `secrets rotate`, then a process with the new key alone reads every secret.
 */
describe('secrets rotate', () => {
  let svc: TestService;
  const oldKek = randomKek('old');
  const newKek = randomKek('new');
  beforeAll(async () => {
    svc = await startTestService({ SECRETS_KEK: oldKek });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  /** A reader of the service's config topic holding only the given keys. */
  async function readerWith(keks: string): Promise<ConfigStore> {
    const codec = AvroCodec.connect(svc.config.schemaRegistryUrl!);
    await codec.register({ [svc.service.topics.config]: 'ConfigEntry' });
    const store = new ConfigStore(svc.service.kafka, codec, svc.service.topics.config, parseKeyring(keks, 'test'));
    await store.start();
    return store;
  }

  it('re-seals every secret under the new key; the old key can then go', async () => {
    const base = `/v1/tenants/${svc.tenantId}`;
    const dest = await svc.api('POST', `${base}/destinations`, { name: 'rotated', url: 'http://127.0.0.1:9/x', auth: { type: 'bearer', token: 'rotate-token-123456' } });
    expect(dest.status).toBe(201);
    const ing = await svc.api('POST', `${base}/ingesters`, { name: 'rotated in', provider: 'github', config: { signing_secret: 'gh-rotate-secret' } });
    expect(ing.status).toBe(201);

    const env = { ...process.env, TOPIC_PREFIX: svc.config.topicPrefix, DATA_DIR: svc.config.dataDir, SECRETS_KEK: `${newKek},${oldKek}` };
    const first = await runScript('cli/main.ts', ['secrets', 'rotate'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ key_id: 'new', entities_resealed: 2, secrets_resealed: 3, from_keys: { old: 3 }, evidence_signing_key: 'resealed' });
    const again = JSON.parse((await runScript('cli/main.ts', ['secrets', 'rotate'], env)).stdout) as Record<string, unknown>;
    expect(again).toMatchObject({ key_id: 'new', entities_resealed: 0, secrets_resealed: 0, from_keys: {}, evidence_signing_key: 'current' });

    // the new key alone reads every secret, though records sealed under the old one are still on the topic
    const fresh = await readerWith(newKek);
    try {
      const d = fresh.get('destination', svc.tenantId, dest.body.id as string)!;
      expect(d.signing_secret).toBe(dest.body.signing_secret);
      expect(d.auth).toEqual({ type: 'bearer', token: 'rotate-token-123456' });
      expect(fresh.get('ingester', svc.tenantId, ing.body.id as string)!.config.signing_secret).toBe('gh-rotate-secret');
    } finally {
      await fresh.stop();
    }
    // the old key alone no longer reads them, and says which key is missing, never a key
    const refused = await readerWith(oldKek).then(() => undefined, (err: Error) => err.message);
    expect(refused).toMatch(/cannot be opened with the keyring.*key "new"/);
    expect(refused).not.toContain(oldKek.split(':')[1]!);
    expect(refused).not.toContain(newKek.split(':')[1]!);
  }, 120_000);
});
