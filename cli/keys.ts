import { Redis } from 'ioredis';
import { AppError } from '../core/errors';
import type { ApiKey } from '../core/model';
import { readRunFile } from '../infra/local';
import { apiKeyView } from '../api/routes/api-keys';
import { validateBody } from '../api/validation';
import { KeyUsage } from '../platform/redis/key-usage';
import { TENANT_ID_PATTERN } from '../core/ids';
import { parseScopes, SCOPES } from '../core/scopes';
import { OPERATOR_TENANT, quotaOf } from '../core/tenants';
import { ensureTenant, issueApiKey, makeRoomForApiKey, type IssuedKey } from '../platform/config-store/tenants';
import { CliError, connect, type CliContext } from './connect';

export interface KeysCreateArgs {
  /** An operator key: it manages tenants (/v1/tenants) and makes portal links for any of them, and holds no tenant. */
  operator?: boolean;
  tenant: string | undefined;
  scopes: string | undefined;
  expiresAt?: string | undefined;
  resources?: string | undefined;
  name?: string | undefined;
}

/** The flags of `keys create` that set members of the API's ApiKeyCreate body, which they are checked against. */
export const KEY_CREATE_FLAGS = { name: 'name', scopes: 'scopes', 'expires-at': 'expires_at', resources: 'resource_ids' } as const;

/** Refuses a flag whose value the API would refuse for its member; a key issued here is one the API could have issued. */
function checkKeyFlags(body: Record<string, unknown>): void {
  // the API requires a name; a key made here may go without one
  const problem = validateBody('createApiKey', body).errors.find((e) => e.message !== 'is required' || e.field in body);
  if (!problem) return;
  const flag = Object.entries(KEY_CREATE_FLAGS).find(([, m]) => problem.field === m || problem.field.startsWith(`${m}[`))?.[0] ?? problem.field;
  throw new CliError(`--${flag} must be accepted by the API: ${problem.field} ${problem.message}`);
}

/** `--expires-at` as an ISO time, or null when not given. */
function expiryOf(flag: string | undefined): string | null {
  if (!flag) return null;
  const t = Date.parse(flag);
  if (Number.isNaN(t)) throw new CliError(`--expires-at "${flag}" is not an ISO 8601 time`);
  return new Date(t).toISOString();
}

/** `keys create`: creates the tenant if needed and issues a key; the plain key is printed once. */
export async function keysCreate(args: KeysCreateArgs): Promise<IssuedKey> {
  if (args.operator) return operatorKeyCreate(args);
  if (!args.tenant) throw new CliError('keys create needs --tenant <id>');
  if (!TENANT_ID_PATTERN.test(args.tenant)) throw new CliError(`--tenant "${args.tenant}" is not a tenant id (lower-case letters, digits, "-" and "_", at most 63)`);
  if (!args.scopes) throw new CliError(`keys create needs --scopes <comma,list> or --scopes all (scopes: ${SCOPES.join(', ')})`);
  const { scopes, unknown } = parseScopes(args.scopes);
  if (unknown.length > 0) throw new CliError(`unknown scope ${unknown.join(', ')}; known: all, ${SCOPES.join(', ')}`);
  if (scopes.length === 0) throw new CliError('--scopes names no scope');
  const expiresAt = expiryOf(args.expiresAt);
  const resourceIds = args.resources ? args.resources.split(',').map((s) => s.trim()).filter(Boolean) : null;
  checkKeyFlags({ scopes, expires_at: expiresAt, resource_ids: resourceIds, ...(args.name === undefined ? {} : { name: args.name }) });
  const ctx = await connect();
  try {
    try {
      await ensureTenant(ctx.store, args.tenant);
    } catch (err) {
      if (err instanceof AppError) throw new CliError(err.message);
      throw err;
    }
    try {
      await makeRoomForApiKey(ctx.store, args.tenant, quotaOf(ctx.store.get('tenant', args.tenant, args.tenant), 'api_keys', ctx.config.quotas));
    } catch (err) {
      if (err instanceof AppError) throw new CliError(`tenant ${args.tenant}: ${err.message} (MAX_API_KEYS_PER_TENANT)`);
      throw err;
    }
    return await issueApiKey(ctx.store, args.tenant, scopes, { expiresAt, resourceIds, name: args.name?.trim() ?? null });
  } finally {
    await ctx.close();
  }
}

/**
 * `keys create --operator`: a key of the operators', made only here, on the service's host (it
 * writes the config topic directly): no API route makes one, so no tenant key can.
 */
async function operatorKeyCreate(args: KeysCreateArgs): Promise<IssuedKey> {
  if (args.tenant || args.scopes || args.resources) throw new CliError('keys create --operator takes no --tenant, --scopes or --resources: an operator key manages tenants, and holds none');
  const expiresAt = expiryOf(args.expiresAt);
  const ctx = await connect();
  try {
    await ctx.store.sync();
    return await issueApiKey(ctx.store, OPERATOR_TENANT, [], { expiresAt, name: args.name?.trim() || 'operator' });
  } finally {
    await ctx.close();
  }
}

/** The tenant a key command acts on: `--tenant`, or the operators' keys with `--operator`. */
export function keyOwner(command: string, tenant: string | undefined, operator: boolean | undefined): string {
  if (operator) {
    if (tenant) throw new CliError(`${command} takes --tenant or --operator, not both`);
    return OPERATOR_TENANT;
  }
  return checkTenant(command, tenant);
}

function checkTenant(command: string, tenant: string | undefined): string {
  if (!tenant) throw new CliError(`${command} needs --tenant <id>`);
  if (!TENANT_ID_PATTERN.test(tenant)) throw new CliError(`--tenant "${tenant}" is not a tenant id (lower-case letters, digits, "-" and "_", at most 63)`);
  return tenant;
}

/** Last uses from the service's Redis when it can be reached; otherwise every key shows null. */
async function lastUsedOf(ctx: CliContext, tenant: string, keys: ApiKey[]): Promise<Map<string, string | null>> {
  const url = ctx.config.redisUrl ?? readRunFile(ctx.config.dataDir)?.redis_url;
  if (!url) return new Map();
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await new KeyUsage(redis, ctx.config.topicPrefix, 60_000).lastUsed(tenant, keys.map((k) => k.id));
  } catch {
    return new Map();
  } finally {
    redis.disconnect();
  }
}

/** `keys list`: the tenant's keys as the API shows them (no secret, no hash), revoked ones included. */
export async function keysList(args: { tenant: string | undefined; operator?: boolean }): Promise<{ tenant_id: string; api_keys: ReturnType<typeof apiKeyView>[] }> {
  const tenant = keyOwner('keys list', args.tenant, args.operator);
  const ctx = await connect();
  try {
    await ctx.store.sync();
    const keys = ctx.store.list('api_key', tenant);
    const used = await lastUsedOf(ctx, tenant, keys);
    return { tenant_id: tenant, api_keys: keys.map((k) => apiKeyView(k, used.get(k.id) ?? null)) };
  } finally {
    await ctx.close();
  }
}

/** `keys revoke`: every API process refuses the key once it reads the revocation (about 100 ms). */
export async function keysRevoke(args: { tenant: string | undefined; id: string | undefined; operator?: boolean }): Promise<ReturnType<typeof apiKeyView>> {
  const tenant = keyOwner('keys revoke', args.tenant, args.operator);
  if (!args.id) throw new CliError('keys revoke needs --id <key id>');
  if (!/^key_[0-9a-hjkmnp-tv-z]{26}$/.test(args.id)) throw new CliError(`--id "${args.id}" is not a key id (key_<ulid>)`);
  const ctx = await connect();
  try {
    await ctx.store.sync();
    const key = ctx.store.get('api_key', tenant, args.id);
    if (!key) throw new CliError(`tenant ${tenant} has no API key ${args.id}`);
    if (key.revoked_at) return apiKeyView(key, null);
    const revoked: ApiKey = { ...key, revoked_at: new Date().toISOString() };
    if (!(await ctx.store.update(revoked))) throw new CliError(`tenant ${tenant} has no API key ${args.id}`);
    return apiKeyView(revoked, null);
  } finally {
    await ctx.close();
  }
}
