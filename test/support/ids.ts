import { randomBytes } from 'node:crypto';

/** A short random suffix for per-test topics, groups, tenants and databases. */
export function uniqueSuffix(): string {
  return randomBytes(5).toString('hex');
}
