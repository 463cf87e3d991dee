import { Webhook } from 'standardwebhooks';
import { outboundHeaders } from '../../pipeline/deliver/stage';
import type { Destination } from '../../core/model';
import type { DeliveryTask } from '../../platform/avro/records';
import { newSigningSecret } from '../../core/signing/standard-webhooks';

/** The signatures a delivery carries around a rotation, walked with a fixed clock. */
describe('webhook-signature after a signing-secret rotation', () => {
  const task: DeliveryTask = { delivery_id: 'dlv_01j9zx5w3k8f6t2q4r7m1n0bcd', event_id: 'evt_1', tenant_id: 't', ingester_id: 'ing_1', destination_id: 'dst_1', correlation_id: 'cor_1', attempt: 1, not_before: 1, received_at: 1, content_type: 'application/json', body: Buffer.from('{"a":1}'), replay_of: null, hops: 0 };
  const current = newSigningSecret();
  const previous = newSigningSecret();
  const expires = Date.parse('2030-01-01T00:00:00.000Z');
  const destination = { signing_secret: current, previous_signing_secret: previous, previous_secret_expires_at: new Date(expires).toISOString() } as Destination;
  /** Whether a Standard Webhooks verifier with `secret` accepts the delivery sent at `now`. */
  const verifies = (secret: string, headers: Record<string, string>, now: number) => {
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
    try {
      new Webhook(secret).verify(task.body, headers);
      return true;
    } catch {
      return false;
    } finally {
      clock.mockRestore();
    }
  };

  it.each([
    ['well before expiry', expires - 3_600_000, 2, true],
    ['a millisecond before expiry', expires - 1, 2, true],
    ['at expiry', expires, 1, false],
    ['after expiry', expires + 1000, 1, false],
  ])('%s (at %d): %d signature(s); the old secret verifies: %s', (_what, now, count, oldVerifies) => {
    const headers = outboundHeaders(task, destination, now);
    const signatures = headers['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(count);
    expect(signatures.every((s) => s.startsWith('v1,'))).toBe(true);
    // standardwebhooks checks the timestamp against its own clock: verify as of the send time
    const at = Number(headers['webhook-timestamp']) * 1000;
    expect(verifies(current, headers, at)).toBe(true);
    expect(verifies(previous, headers, at)).toBe(oldVerifies);
  });

  it('signs with the current secret only when no rotation kept one', () => {
    const headers = outboundHeaders(task, { ...destination, previous_signing_secret: null, previous_secret_expires_at: null }, expires - 1000);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(1);
  });
});
