import { parseAllowList } from '../../../core/address-policy';
import type { Destination, DestinationAuth, DestinationType } from '../../../core/model';
import { PublishFailed, type OutboundMessage, type Publisher } from '../../../pipeline/deliver/publishers';
import type { SeenMessage } from '../../support/brokers';
import { uniqueSuffix } from '../../support/ids';

export const LOOPBACK = parseAllowList('loopback').allow;
export const NOTHING_PRIVATE = parseAllowList('').allow;

export function brokerDestination(type: DestinationType, url: string, config: Record<string, unknown>, auth: DestinationAuth | null = null, id = `dst_${uniqueSuffix()}`): Destination {
  return {
    kind: 'destination',
    id,
    tenant_id: 'ten_publishers',
    name: `${type} test`,
    type,
    url,
    config,
    status: 'active',
    signing_secret: 'whsec_dGVzdA==',
    auth,
    disabled_reason: null,
  } as Destination;
}

/**
 * A delivery as the stage sends it: Standard Webhooks headers, and a body with bytes that are not
 * UTF-8 (a broker or client that turned the body into text would change them).
 */
export function outbound(run: string, i: number): OutboundMessage {
  const body = Buffer.concat([Buffer.from(JSON.stringify({ run, i })), Buffer.from([0x00, 0xff, 0xfe, 0x80, i % 256])]);
  return {
    key: `key-${i % 7}`,
    headers: {
      'webhook-id': `msg_${run}_${i}`,
      'webhook-timestamp': String(1_700_000_000 + i),
      'webhook-signature': `v1,c2lnbmF0dXJl${i}`,
      'content-type': 'application/json',
    },
    body,
  };
}

/** The PublishFailed that `work` rejects with (fails the test when it resolves or rejects otherwise). */
export async function failureOf(work: Promise<unknown>): Promise<PublishFailed> {
  try {
    await work;
  } catch (err) {
    if (err instanceof PublishFailed) return err;
    throw new Error(`rejected with ${String(err)}, not a PublishFailed`);
  }
  throw new Error('resolved; a PublishFailed was expected');
}

/** The delivery a message read back is (its webhook-id, or the one its body names where headers do not travel). */
export function idOf(m: SeenMessage): string {
  const header = m.headers['webhook-id'];
  if (header !== undefined) return header;
  const { run, i } = JSON.parse(m.body.subarray(0, m.body.indexOf(0)).toString()) as { run: string; i: number };
  return `msg_${run}_${i}`;
}

/** Checks that every message of `sent` arrived as sent (body bytes, and the Standard Webhooks headers unless `headers: false`). */
export function expectArrived(seen: SeenMessage[], sent: OutboundMessage[], options: { headers?: boolean } = {}): void {
  const byId = new Map(seen.map((m) => [idOf(m), m]));
  const missing = sent.filter((m) => !byId.has(m.headers['webhook-id']!));
  expect(missing.map((m) => m.headers['webhook-id'])).toEqual([]);
  for (const m of sent) {
    const got = byId.get(m.headers['webhook-id']!)!;
    expect(got.body.equals(m.body)).toBe(true);
    if (options.headers !== false) {
      for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) expect(got.headers[name]).toBe(m.headers[name]);
    }
  }
}

export interface OutageRun {
  /** Every message the broker acknowledged (before, during and after the outage): each must arrive. */
  acknowledged: OutboundMessage[];
  /** Every message ever published: nothing else may arrive. */
  attempted: OutboundMessage[];
  /** The failures while the broker was down. */
  failures: PublishFailed[];
  /** Failed publishes sent again after the broker came back, each acknowledged. */
  republished: number;
}

/**
 * Publishes through an outage: a few before it, then a stream of publishes during which `down`
 * takes the broker away (with `midStream`; else it goes down first), until a few of them failed;
 * then `up` brings it back, and every failed message is published again on the same publisher,
 * each of which must be acknowledged at once (the pool connects again).
 */
export async function publishThroughOutage(options: {
  publisher: Publisher;
  destination: Destination;
  down(): Promise<void>;
  up(): Promise<void>;
  midStream: boolean;
  timeoutMs?: number;
}): Promise<OutageRun> {
  const { publisher, destination } = options;
  const timeoutMs = options.timeoutMs ?? 3_000;
  const run = uniqueSuffix();
  let next = 0;
  const acknowledged: OutboundMessage[] = [];
  const attempted: OutboundMessage[] = [];
  const failed: OutboundMessage[] = [];
  const failures: PublishFailed[] = [];
  const send = async (m: OutboundMessage) => {
    attempted.push(m);
    await publisher.publish(destination, m, timeoutMs);
    acknowledged.push(m);
  };
  for (let i = 0; i < 5; i++) await send(outbound(run, next++));

  if (!options.midStream) await options.down();
  let down = !options.midStream;
  // publishes begun once the broker was down: the ones that show it reconnects and fails again
  let failedWhileDown = 0;
  const deadline = Date.now() + 30_000;
  while (failedWhileDown < 3) {
    if (Date.now() > deadline) throw new Error(`only ${failedWhileDown} publishes failed while the broker was down`);
    const startedDown = down;
    // a few in flight at once: when the broker goes away, some are in flight across it
    const batch = [outbound(run, next++), outbound(run, next++), outbound(run, next++)].map(async (x) => {
      try {
        await send(x);
      } catch (err) {
        if (!(err instanceof PublishFailed)) throw err;
        failures.push(err);
        failed.push(x);
        if (startedDown) failedWhileDown++;
      }
    });
    if (!down && acknowledged.length >= 11) {
      await options.down();
      down = true;
    }
    await Promise.all(batch);
    await new Promise((r) => setTimeout(r, 20));
  }

  await options.up();
  for (const m of failed) await send(m);
  for (let i = 0; i < 3; i++) await send(outbound(run, next++));
  return { acknowledged, attempted, failures, republished: failed.length };
}

/** The outage run's messages arrived: every acknowledged one, and none that was never published. */
export function expectNoneLost(seen: SeenMessage[], run: OutageRun, options: { headers?: boolean } = {}): void {
  expectArrived(seen, run.acknowledged, options);
  const attempted = new Set(run.attempted.map((m) => m.headers['webhook-id']));
  const unknown = seen.map(idOf).filter((id) => !attempted.has(id));
  expect(unknown).toEqual([]);
}
