import { createHmac, randomBytes } from 'node:crypto';
import { Type } from 'avsc';
import { BodySealer, bodySealings, openBody, sealBody, UnopenableBodyError, XCHACHA_MAX_BYTES, type BodyKey, type BodyKeys } from '../../core/secrets/body-seal';
import { AvroCodec, readSchema } from '../../platform/avro/codec';
import type { DeliveryTask, WebhookEvent } from '../../platform/avro/records';

// the independent AEADs: @noble/ciphers is an ES module, which jest compiles to CommonJS (jest.config.js)
const { gcm } = require('@noble/ciphers/aes.js') as typeof import('@noble/ciphers/aes.js', { with: { 'resolution-mode': 'import' } });
const { xchacha20poly1305 } = require('@noble/ciphers/chacha.js') as typeof import('@noble/ciphers/chacha.js', { with: { 'resolution-mode': 'import' } });

const DAY = 86_400_000;
const keyOf = (id: string): BodyKey => ({ id, key: randomBytes(32) });
const place = { tenant_id: 'tenant-a', event_id: 'evt_1', received_at: 1_700_000_000_000 };
const body = Buffer.from('{"order":"ord_8f3a","amount":1999}');

/** Data keys in memory: made on `ensure`, forgotten on `destroy` (what erasing the tenant does on the config topic). */
class MemoryKeys implements BodyKeys {
  readonly keys = new Map<string, BodyKey[]>();
  made = 0;
  current(tenantId: string) {
    return this.keys.get(tenantId)?.[0];
  }
  async ensure(tenantId: string) {
    if (!this.current(tenantId)) {
      this.made++;
      this.keys.set(tenantId, [keyOf(`dk_${tenantId}_${this.made}`)]);
    }
    return this.current(tenantId)!;
  }
  byId(tenantId: string, keyId: string) {
    return this.keys.get(tenantId)?.find((k) => k.id === keyId);
  }
  async find(tenantId: string, keyId: string) {
    return this.byId(tenantId, keyId);
  }
  destroy(tenantId: string) {
    this.keys.delete(tenantId);
  }
}

describe('sealing a body', () => {
  const key = keyOf('dk_1');

  /** HKDF-SHA256 with an empty salt and a 32-byte output (RFC 5869), written out: one extract, one expand block. */
  const subkey = (k: Buffer, format: number, day: number) => {
    const prk = createHmac('sha256', Buffer.alloc(32)).update(k).digest();
    return createHmac('sha256', prk).update(`hookline body v${format} day ${day}`).update(Buffer.from([1])).digest();
  };
  const aad = (format: number) => Buffer.from(JSON.stringify([format, key.id, place.tenant_id, place.event_id]));
  const day = Math.floor(place.received_at / DAY);

  it('seals bodies up to 8 KiB as format 2 | nonce | ciphertext | tag (XChaCha20-Poly1305), which an independent implementation opens', () => {
    for (const b of [body, Buffer.alloc(0), randomBytes(XCHACHA_MAX_BYTES)]) {
      const sealed = sealBody(key, place, b);
      expect(sealed[0]).toBe(2);
      expect(sealed.length).toBe(1 + 24 + b.length + 16);
      const independent = xchacha20poly1305(subkey(key.key, 2, day), sealed.subarray(1, 25), aad(2)).decrypt(sealed.subarray(25));
      expect(Buffer.from(independent).equals(b)).toBe(true);
      expect(openBody(key, place, sealed).equals(b)).toBe(true);
    }
    expect(sealBody(key, place, body).includes(Buffer.from('ord_8f3a'))).toBe(false);
    expect(sealBody(key, place, body).subarray(1, 25).equals(sealBody(key, place, body).subarray(1, 25))).toBe(false);
    // the same UTC day of receipt: the same subkey
    expect(openBody(key, { ...place, received_at: place.received_at + 1_000 }, sealBody(key, place, body)).equals(body)).toBe(true);
    // and what the independent implementation seals opens here
    const nonce = randomBytes(24);
    const theirs = Buffer.concat([Buffer.from([2]), nonce, xchacha20poly1305(subkey(key.key, 2, day), nonce, aad(2)).encrypt(body)]);
    expect(openBody(key, place, theirs).equals(body)).toBe(true);
  });

  it('seals larger bodies as format 1 | IV | ciphertext | tag (AES-256-GCM), which an independent implementation opens, and opens format 1 of any size', () => {
    const large = randomBytes(XCHACHA_MAX_BYTES + 1);
    const sealed = sealBody(key, place, large);
    expect(sealed[0]).toBe(1);
    expect(sealed.length).toBe(1 + 12 + large.length + 16);
    expect(Buffer.from(gcm(subkey(key.key, 1, day), sealed.subarray(1, 13), aad(1)).decrypt(sealed.subarray(13))).equals(large)).toBe(true);
    expect(openBody(key, place, sealed).equals(large)).toBe(true);
    // small bodies sealed in format 1 (every body before format 2) still open
    const iv = randomBytes(12);
    const old = Buffer.concat([Buffer.from([1]), iv, gcm(subkey(key.key, 1, day), iv, aad(1)).encrypt(body)]);
    expect(openBody(key, place, old).equals(body)).toBe(true);
    expect(openBody(key, place, sealBody(key, place, body, 1)).equals(body)).toBe(true);
  });

  it.each([
    ['another tenant', key, { ...place, tenant_id: 'tenant-b' }],
    ['another event', key, { ...place, event_id: 'evt_2' }],
    ['another day of receipt', key, { ...place, received_at: place.received_at + DAY }],
    ['another key', keyOf('dk_1'), place],
    ['the same key under another id', { id: 'dk_2', key: key.key }, place],
  ])('does not open for %s', (_what, k, p) => {
    const sealed = sealBody(key, place, body);
    expect(() => openBody(k, p, sealed)).toThrow(UnopenableBodyError);
  });

  it.each([
    ['format 2', body],
    ['format 1', randomBytes(XCHACHA_MAX_BYTES + 100)],
  ])('does not open in %s once any byte is altered, or truncated, or in another format', (_format, b) => {
    const sealed = sealBody(key, place, b);
    const nonce = sealed[0] === 2 ? 24 : 12;
    // every byte of the header and tag, and a spread of the ciphertext's
    const step = Math.max(1, Math.floor(b.length / 64));
    for (let i = 1; i < sealed.length; i += i <= nonce || i >= sealed.length - 16 ? 1 : step) {
      const altered = Buffer.from(sealed);
      altered[i]! ^= 0x01;
      expect(() => openBody(key, place, altered)).toThrow(UnopenableBodyError);
    }
    // the other format's reading of the same bytes does not open either
    const swapped = Buffer.from(sealed);
    swapped[0] = sealed[0] === 2 ? 1 : 2;
    expect(() => openBody(key, place, swapped)).toThrow(UnopenableBodyError);
    expect(() => openBody(key, place, Buffer.concat([Buffer.from([3]), sealed.subarray(1)]))).toThrow(/format 3/);
    expect(() => openBody(key, place, sealed.subarray(0, 20))).toThrow(/truncated/);
    expect(() => openBody(key, place, Buffer.alloc(0))).toThrow(/truncated/);
  });
});

describe('the sealer the codec uses', () => {
  const event = (id: string, b = body) => ({ ...place, event_id: id, body: b, body_key: null as string | null });

  it('waits for a tenant\'s first key once, then seals without a promise; a record written before sealing reads as it is', async () => {
    const keys = new MemoryKeys();
    const sealer = new BodySealer(keys);
    expect(sealer.sealNow(event('evt_1'))).toBeUndefined();
    const sealed = await sealer.seal(event('evt_1'));
    expect(keys.made).toBe(1);
    expect(sealed.body_key).toBe('dk_tenant-a_1');
    expect(sealer.sealNow(event('evt_2'))?.body_key).toBe('dk_tenant-a_1');
    expect(keys.made).toBe(1);
    expect((await sealer.open(sealed)).body.equals(body)).toBe(true);
    const clear = event('evt_3');
    expect(await sealer.open(clear)).toBe(clear);
  });

  it('seals a body once: the same body written again for the same event carries the same bytes', async () => {
    const keys = new MemoryKeys();
    const sealer = new BodySealer(keys);
    const first = await sealer.seal(event('evt_1'));
    const opened = (await sealer.open(first)).body;
    // an output of the stage that read it (validated, filtered, a delivery task, a retry)
    expect(sealer.sealNow({ ...event('evt_1', opened), delivery_id: 'dlv_1' })!.body).toBe(first.body);
    expect(sealer.sealNow(event('evt_1', Buffer.from(opened)))!.body.equals(first.body)).toBe(false);
    // never to another event: its bytes would not open there
    const other = sealer.sealNow(event('evt_2', opened))!;
    expect(other.body.equals(first.body)).toBe(false);
    expect((await sealer.open(other)).body.equals(body)).toBe(true);
  });

  it('clocks every seal and open, a body found among the kept ones included, and nothing for a body in clear', async () => {
    const keys = new MemoryKeys();
    const sealer = new BodySealer(keys);
    let clock = bodySealings.seconds;
    const sealed = await sealer.seal(event('evt_1'));
    expect(bodySealings.seconds).toBeGreaterThan(clock);
    clock = bodySealings.seconds;
    expect(sealer.openNow(sealed)!.body.equals(body)).toBe(true);
    expect(bodySealings.seconds).toBeGreaterThan(clock);
    clock = bodySealings.seconds;
    expect(new BodySealer(keys).openNow(sealed)!.body.equals(body)).toBe(true);
    expect(bodySealings.seconds).toBeGreaterThan(clock);
    clock = bodySealings.seconds;
    const clear = event('evt_2');
    expect(sealer.openNow(clear)).toBe(clear);
    expect(bodySealings.seconds).toBe(clock);
  });

  it('opens a body read again in the same process once, and only from the very same sealed bytes of the same event', async () => {
    const keys = new MemoryKeys();
    const sealer = new BodySealer(keys);
    const sealed = await sealer.seal(event('evt_1'));
    const opened = bodySealings.opened;
    // the stages of one process reading the event the ingest sealed (the chain, deliver, the sink)
    expect(sealer.openNow(sealed)!.body.equals(body)).toBe(true);
    expect(sealer.openNow({ ...sealed, delivery_id: 'dlv_1' })!.body.equals(body)).toBe(true);
    expect(bodySealings.opened).toBe(opened);
    // another process opens it itself
    expect(new BodySealer(keys).openNow(sealed)!.body.equals(body)).toBe(true);
    expect(bodySealings.opened).toBe(opened + 1);
    // the same IV with another byte, the same bytes for another event or another day: opened for real, and refused
    const altered = Buffer.from(sealed.body);
    altered[altered.length - 1]! ^= 1;
    expect(() => sealer.openNow({ ...sealed, body: altered })).toThrow(UnopenableBodyError);
    expect(() => sealer.openNow({ ...sealed, event_id: 'evt_2' })).toThrow(UnopenableBodyError);
    expect(() => sealer.openNow({ ...sealed, received_at: sealed.received_at + DAY })).toThrow(UnopenableBodyError);
    // its key destroyed, a body kept here does not open either
    keys.destroy('tenant-a');
    await expect(sealer.open(sealed)).rejects.toThrow(UnopenableBodyError);
  });


  it('keeps the latest 8,192 bodies (16 MiB at most) beside their sealed bytes: older ones are opened again', async () => {
    const keys = new MemoryKeys();
    const sealer = new BodySealer(keys);
    await keys.ensure('tenant-a');
    const many = Array.from({ length: 8_192 + 100 }, (_, i) => sealer.sealNow(event(`evt_${i}`))!);
    const opened = bodySealings.opened;
    // the latest 8,192 are kept, the first 100 are not: opened for real, and then kept again
    for (const s of many.slice(100)) expect(sealer.openNow(s)!.body.equals(body)).toBe(true);
    expect(bodySealings.opened).toBe(opened);
    for (const s of many.slice(0, 100)) expect(sealer.openNow(s)!.body.equals(body)).toBe(true);
    expect(bodySealings.opened).toBe(opened + 100);
    expect(sealer.openNow(many[0]!)!.body.equals(body)).toBe(true);
    expect(bodySealings.opened).toBe(opened + 100);

    // by bytes: 100 KiB bodies (200 KiB with their sealed bytes), so 16 MiB keeps the latest 81
    const big = Buffer.alloc(100 * 1024, 0x7a);
    const fresh = new BodySealer(keys);
    const bigs = Array.from({ length: 100 }, (_, i) => fresh.sealNow({ ...event(`evt_big_${i}`), body: big })!);
    const before = bodySealings.opened;
    for (const s of bigs.slice(19)) expect(fresh.openNow(s)!.body.equals(big)).toBe(true);
    expect(bodySealings.opened).toBe(before);
    expect(fresh.openNow(bigs[18]!)!.body.equals(big)).toBe(true);
    expect(bodySealings.opened).toBe(before + 1);
  });
  it('fails to open once the tenant\'s key is destroyed, and for a body moved to another event', async () => {
    const keys = new MemoryKeys();
    const sealer = new BodySealer(keys);
    const sealed = await sealer.seal(event('evt_1'));
    await expect(sealer.open({ ...sealed, event_id: 'evt_9' })).rejects.toThrow(UnopenableBodyError);
    keys.destroy('tenant-a');
    expect(sealer.openNow(sealed)).toBeUndefined();
    await expect(sealer.open(sealed)).rejects.toThrow(/sealed with key dk_tenant-a_1, which tenant tenant-a no longer has/);
  });
});

describe('the codec with data keys', () => {
  // a registry in memory: schema ids by subject, and the writer schemas by id
  const before = Type.forSchema({ ...JSON.parse(readSchema('WebhookEvent')), fields: JSON.parse(readSchema('WebhookEvent')).fields.filter((f: { name: string }) => f.name !== 'body_key') });
  const writers = new Map<number, Type>([[9, before]]);
  const registry = {
    register: async (schema: { schema: string }) => {
      const id = writers.size + 1;
      writers.set(id, Type.forSchema(JSON.parse(schema.schema)));
      return { id };
    },
    getSchema: async (id: number) => writers.get(id),
    encode: async (id: number, value: unknown) => Buffer.concat([Buffer.from([0, 0, 0, 0, id]), writers.get(id)!.toBuffer(value)]),
  };
  const wire = (id: number, avro: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 0, id]), avro]);
  const event: WebhookEvent = {
    ...place, ingester_id: 'ing_1', correlation_id: 'cor_1', method: 'POST', query: '', headers: [], content_type: 'application/json', body, source_ip: null, event_type: null, hops: 0,
  };
  const task: DeliveryTask = {
    delivery_id: 'dlv_1', event_id: 'evt_1', tenant_id: 'tenant-a', ingester_id: 'ing_1', destination_id: 'dst_1', correlation_id: 'cor_1', attempt: 1, not_before: 0,
    received_at: place.received_at, content_type: null, body, replay_of: null, hops: 0,
  };

  it('writes every event and task body sealed, reads it opened, and still reads records written before sealing', async () => {
    const keys = new MemoryKeys();
    const codec = new AvroCodec(registry as never);
    await codec.register({ received: 'WebhookEvent', requested: 'DeliveryTask' });
    codec.sealBodies(keys);
    const plain = new AvroCodec(registry as never);
    await plain.register({ received: 'WebhookEvent' });

    expect(codec.encodeNow('received', 'WebhookEvent', event)).toBeUndefined(); // the tenant's key is made first
    const bytes = await codec.encode('received', 'WebhookEvent', event);
    const taskBytes = codec.encodeNow('requested', 'DeliveryTask', task)!;
    for (const b of [bytes, taskBytes]) expect(b.includes(Buffer.from('ord_8f3a'))).toBe(false);
    const stored = await plain.decodeStored('WebhookEvent', bytes);
    expect(stored.body_key).toBe('dk_tenant-a_1');
    expect(stored.body.equals(body)).toBe(false);

    expect(codec.decodeNow('WebhookEvent', bytes)!.body.equals(body)).toBe(true);
    expect((await codec.decode('DeliveryTask', taskBytes)).body.equals(body)).toBe(true);
    const read = codec.projection('WebhookEvent', ['event_id', 'body']);
    expect(read.now(bytes)!.body.equals(body)).toBe(true);
    expect(codec.projection('WebhookEvent', ['event_id']).now(bytes)).toEqual({ event_id: 'evt_1' });
    // whose a dead letter's record is needs no body: it stays as stored
    expect(((await codec.decodeNamed(bytes)).value as WebhookEvent).body.equals(stored.body)).toBe(true);

    // written before the field, and by a codec without keys: in clear, read as they are
    const old = wire(9, before.toBuffer(event));
    const decodedOld = await codec.decode('WebhookEvent', old);
    expect(decodedOld).toMatchObject({ event_id: 'evt_1', body });
    expect(decodedOld.body_key).toBeUndefined(); // records decode with the schema they were written with
    // a codec without keys never passes sealed bytes on as a body: it refuses to read or write them
    await expect(plain.encode('received', 'WebhookEvent', { ...event, body_key: 'dk_elsewhere' })).rejects.toThrow(/is sealed with data key dk_elsewhere, and this codec holds no data keys/);
    await expect(plain.decode('WebhookEvent', bytes)).rejects.toThrow(/is sealed with data key dk_tenant-a_1, and this codec holds no data keys/);
    expect(() => plain.decodeNow('WebhookEvent', bytes)).toThrow(/this codec holds no data keys/);

    // its tenant's key destroyed: unopenable, not undecodable
    keys.destroy('tenant-a');
    expect(codec.decodeNow('WebhookEvent', bytes)).toBeUndefined();
    await expect(codec.decode('WebhookEvent', bytes)).rejects.toThrow(UnopenableBodyError);
    await expect(read(bytes)).rejects.toThrow(UnopenableBodyError);
  });
});
