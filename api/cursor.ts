import { createHash } from 'node:crypto';
import { AppError } from '../core/errors';

/**
 * Opaque keyset cursors: the sort key of the last row of a page plus a fingerprint of the
 * filters, base64url JSON. A cursor used with other filters is refused.
 */
export function encodeCursor(position: unknown[], filters: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify({ p: position, f: fingerprint(filters) })).toString('base64url');
}

export function decodeCursor(cursor: string, filters: Record<string, unknown>): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const c = parsed as { p?: unknown; f?: unknown } | undefined;
  if (!c || !Array.isArray(c.p) || typeof c.f !== 'string') {
    throw new AppError('validation-error', 'the cursor is not one this API issued', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] });
  }
  if (c.f !== fingerprint(filters)) {
    throw new AppError('validation-error', 'the cursor was issued for other filters', { errors: [{ field: 'cursor', message: 'does not match the filters of this request' }] });
  }
  return c.p;
}

function fingerprint(filters: Record<string, unknown>): string {
  const sorted = Object.keys(filters).sort().map((k) => [k, filters[k] ?? null]);
  return createHash('sha256').update(JSON.stringify(sorted)).digest('base64url').slice(0, 12);
}
