/** Synthetic delivery attempts, the same ones wherever a benchmark needs them. */
import { createHash } from 'node:crypto';
import { ulid } from '../../core/ids';
import type { DeliveryOutcome } from '../../platform/avro/records';

const DAY_MS = 86_400_000;

export function idFrom(prefix: string, time: number, n: number, salt: number): string {
  const b = Buffer.alloc(10);
  b.writeUInt32BE(salt, 0);
  b.writeUIntBE(n, 4, 6);
  return `${prefix}_${ulid(time, b)}`;
}

/** Attempt `i` of `rows`: 5% failed, 5% retrying, the rest delivered, spread over 90 days. */
export function syntheticOutcome(i: number, rows: number, tenants: string[], destinations: string[], hashes: string[], end: number): DeliveryOutcome {
  const at = end - Math.floor(((rows - i) / rows) * 90 * DAY_MS);
  const kind = i % 20;
  const status = kind === 0 ? 'failed' : kind === 1 ? 'retrying' : 'delivered';
  return {
    delivery_id: idFrom('dlv', at, i, 0x5eed),
    event_id: idFrom('evt', at, i, 0xe0e0),
    tenant_id: tenants[i % tenants.length]!,
    destination_id: destinations[i % destinations.length]!,
    correlation_id: `cor_${i % 997}`,
    attempt_number: 1 + (i % 3),
    status,
    response_code: status === 'delivered' ? 200 : 500,
    attempted_at: at,
    duration_ms: 5 + (i % 200),
    error_message: status === 'delivered' ? null : 'status 500',
    body_sha256: hashes[i % hashes.length]!,
    next_attempt_at: status === 'retrying' ? at + 300_000 : null,
  };
}


/** Attempt `i` of `rows` attempts ending at `end` (epoch ms), over 50 destinations of `tenants`. */
export function outcomeGenerator(rows: number, tenants: string[], end: number): (i: number) => DeliveryOutcome {
  const destinations = Array.from({ length: 50 }, (_, k) => idFrom('dst', 1_700_000_000_000, k, 0xd0d0));
  const hashes = Array.from({ length: 1024 }, (_, k) => createHash('sha256').update(String(k)).digest('hex'));
  return (i) => syntheticOutcome(i, rows, tenants, destinations, hashes, end);
}
