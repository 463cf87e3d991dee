import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { entityKey, type Destination } from '../../core/model';
import { newId } from '../../core/ids';
import { AvroCodec } from '../../platform/avro/codec';
import { createKafka, ensureTopics } from '../../platform/kafka/client';
import { ConfigStore } from '../../platform/config-store/config-store';
import { parseKeyring } from '../../core/secrets/keyring';
import { randomKeyring } from '../support/keyring';
import { destinationWithIngester, sendEvent, waitForStates } from '../support/flow';
import { uniqueSuffix } from '../support/ids';
import { startTestService, type TestService } from '../support/service';

/** A destination that holds each request until the test answers it. */
async function heldReceiver() {
  const held: http.ServerResponse[] = [];
  const arrivals: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      arrivals.splice(0).forEach((a) => a());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrived: () => (held.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => arrivals.push(resolve))),
    answer: (status: number) => held.splice(0).forEach((res) => res.writeHead(status).end('gone')),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function destination(tenantId: string): Destination {
  const now = new Date().toISOString();
  return { kind: 'destination', id: newId('destination'), tenant_id: tenantId, name: 'd', url: 'https://example.com/', status: 'active', signing_secret: 'whsec_x', disabled_reason: null, retry_schedule_ms: null, created_at: now, updated_at: now };
}

describe('a destination deleted while an attempt is in flight', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ DELIVERY_TIMEOUT_MS: '30000' });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('stays deleted when the attempt then gets 410 Gone, also for a reader of the whole config topic', async () => {
    const receiver = await heldReceiver();
    try {
      const { hookUrl, destinationId } = await destinationWithIngester(svc, 'deleted in flight', receiver.url, { retry_schedule_ms: [0] });
      const path = `/v1/tenants/${svc.tenantId}/destinations/${destinationId}`;
      const eventId = await sendEvent(hookUrl);
      await receiver.arrived();
      expect((await svc.api('DELETE', path)).status).toBe(204);
      receiver.answer(410);
      // the failure is recorded after the stage has acted on the 410
      await waitForStates(svc, eventId, ['failed']);
      expect((await svc.api('GET', path)).status).toBe(404);
      const list = await svc.api('GET', `/v1/tenants/${svc.tenantId}/destinations`);
      expect(list.status).toBe(200);
      expect(list.body.destinations.map((d: { id: string }) => d.id)).not.toContain(destinationId);

      const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'config-reread-test', { quiet: true });
      const reader = new ConfigStore(kafka, AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!), svc.service.store.topic, parseKeyring(process.env.SECRETS_KEK!, 'SECRETS_KEK'));
      await reader.start();
      try {
        expect(reader.get('destination', svc.tenantId, destinationId)).toBeUndefined();
      } finally {
        await reader.stop();
      }
    } finally {
      await receiver.close();
    }
  });
});

describe('update-only config writes', () => {
  it('apply over an existing entity, never over a deleted one, and read back the same from the start', async () => {
    const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'config-update-test', { quiet: true });
    const topic = `config-${uniqueSuffix()}`;
    await ensureTopics(kafka, [{ topic, partitions: 2, compacted: true }]);
    const codec = AvroCodec.connect(process.env.SCHEMA_REGISTRY_URL!);
    await codec.register({ [topic]: 'ConfigEntry' });
    const keyring = randomKeyring();
    const writer = new ConfigStore(kafka, codec, topic, keyring);
    const other = new ConfigStore(kafka, codec, topic, keyring);
    await Promise.all([writer.start(), other.start()]);
    const readFromStart = async () => {
      const reader = new ConfigStore(kafka, codec, topic, keyring);
      await reader.start();
      return reader;
    };
    try {
      const live = destination('t1');
      const gone = destination('t1');
      await writer.put(live);
      await writer.put(gone);
      await other.sync();
      // another process deletes one; the writer has not seen it yet when it updates
      await other.remove('destination', 't1', gone.id);
      expect(await writer.update({ ...live, status: 'disabled' })).toBe(true);
      expect(await writer.update({ ...gone, status: 'disabled' })).toBe(false);
      await other.sync();
      for (const store of [writer, other]) {
        expect(store.get('destination', 't1', live.id)?.status).toBe('disabled');
        expect(store.get('destination', 't1', gone.id)).toBeUndefined();
      }
      const reader = await readFromStart();
      expect(reader.get('destination', 't1', live.id)?.status).toBe('disabled');
      expect(reader.get('destination', 't1', gone.id)).toBeUndefined();
      await reader.stop();

      // compaction may keep only an applied update of a key: read alone, it still holds
      const compacted = destination('t2');
      const producer = kafka.producer();
      await producer.connect();
      const value = await codec.encode(topic, 'ConfigEntry', { kind: 'destination', tenant_id: 't2', id: compacted.id, data: JSON.stringify({ ...compacted, status: 'disabled' }), written_at: Date.now(), update_only: true });
      await producer.send({ topic, acks: -1, messages: [{ key: entityKey('destination', 't2', compacted.id), value }] });
      await producer.disconnect();
      const afterCompaction = await readFromStart();
      expect(afterCompaction.get('destination', 't2', compacted.id)?.status).toBe('disabled');
      await afterCompaction.stop();
    } finally {
      await Promise.all([writer.stop(), other.stop()]);
    }
  });
});
