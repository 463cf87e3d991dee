import { TENANT_ID_PATTERN } from '../core/ids';
import { parseScopes, SCOPES } from '../core/scopes';
import { ensureTenant, issueApiKey, type IssuedKey } from '../platform/config-store/tenants';
import { CliError, connect } from './connect';

export interface KeysCreateArgs {
  tenant: string | undefined;
  scopes: string | undefined;
  expiresAt?: string | undefined;
  resources?: string | undefined;
}

/** `keys create`: creates the tenant if needed and issues a key; the plain key is printed once. */
export async function keysCreate(args: KeysCreateArgs): Promise<IssuedKey> {
  if (!args.tenant) throw new CliError('keys create needs --tenant <id>');
  if (!TENANT_ID_PATTERN.test(args.tenant)) throw new CliError(`--tenant "${args.tenant}" is not a tenant id (lower-case letters, digits, "-" and "_", at most 63)`);
  if (!args.scopes) throw new CliError(`keys create needs --scopes <comma,list> or --scopes all (scopes: ${SCOPES.join(', ')})`);
  const { scopes, unknown } = parseScopes(args.scopes);
  if (unknown.length > 0) throw new CliError(`unknown scope ${unknown.join(', ')}; known: all, ${SCOPES.join(', ')}`);
  if (scopes.length === 0) throw new CliError('--scopes names no scope');
  let expiresAt: string | null = null;
  if (args.expiresAt) {
    const t = Date.parse(args.expiresAt);
    if (Number.isNaN(t)) throw new CliError(`--expires-at "${args.expiresAt}" is not an ISO 8601 time`);
    expiresAt = new Date(t).toISOString();
  }
  const resourceIds = args.resources ? args.resources.split(',').map((s) => s.trim()).filter(Boolean) : null;
  const ctx = await connect();
  try {
    await ensureTenant(ctx.store, args.tenant);
    return await issueApiKey(ctx.store, args.tenant, scopes, { expiresAt, resourceIds });
  } finally {
    await ctx.close();
  }
}
