import type { Request, Response } from 'express';
import { AppError } from '../core/errors';
import type { EntityKind } from '../core/model';
import type { ConfigStore, EntityOf } from '../platform/config-store/config-store';
import { authOf } from './auth';
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

/**
 * The list handler of a configuration kind: the caller's tenant's objects in creation order,
 * only those a key limited to some ids may see, a page at a time under `member`.
 */
export function configListHandler<K extends EntityKind>(store: ConfigStore, kind: K, member: string, view: (item: EntityOf<K>, tenantId: string) => unknown) {
  return (req: Request, res: Response): void => {
    const key = authOf(res);
    const all = store.list(kind, key.tenant_id).filter((item) => !key.resource_ids || key.resource_ids.includes(item.id));
    const { page, next_cursor } = pageOf(all, req.query);
    res.json({ [member]: page.map((item) => view(item, key.tenant_id)), next_cursor });
  };
}
