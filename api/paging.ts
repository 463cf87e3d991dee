import { AppError } from '../core/errors';
import { decodeCursor, encodeCursor } from './cursor';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

/** `limit` as the API takes it: an integer from 1 to MAX_LIMIT, default DEFAULT_LIMIT. */
export function parseLimit(raw: unknown): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_LIMIT) {
    throw new AppError('validation-error', `limit must be an integer from 1 to ${MAX_LIMIT}`, { errors: [{ field: 'limit', message: `must be an integer from 1 to ${MAX_LIMIT}` }] });
  }
  return Number(raw);
}

/**
 * One page of entities held in memory, by ascending id (ids sort by creation time). The
 * cursor is the last id of the page, so items created meanwhile land after it: no item is
 * seen twice or skipped.
 */
export function pageOf<T extends { id: string }>(items: T[], query: { limit?: unknown; cursor?: unknown }, filters: Record<string, unknown> = {}): { page: T[]; next_cursor: string | null } {
  const limit = parseLimit(query.limit);
  let after: string | undefined;
  if (typeof query.cursor === 'string' && query.cursor !== '') {
    const [last] = decodeCursor(query.cursor, filters);
    if (typeof last !== 'string') throw new AppError('validation-error', 'the cursor is not one this API issued', { errors: [{ field: 'cursor', message: 'is not a valid cursor' }] });
    after = last;
  }
  const sorted = [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const rest = after === undefined ? sorted : sorted.filter((i) => i.id > after!);
  const page = rest.slice(0, limit);
  const last = page[page.length - 1];
  return { page, next_cursor: rest.length > limit && last ? encodeCursor([last.id], filters) : null };
}
