import { request } from 'undici';
import { newApiKey } from '../../core/api-keys';
import type { ApiKey } from '../../core/model';
import type { Scope } from '../../core/scopes';
import type { KeyLookup } from '../auth';
import type { ApiProbe, ProbeAnswer } from './checks';

/**
 * Requests to this process's own API over loopback, so that a probe or a tool goes through
 * exactly the middleware and routes a client's request does. Probe keys are held in memory for
 * the duration of one probe only: they are never written to the configuration, and their
 * secrets never leave this process.
 */
export class InProcessApi implements ApiProbe {
  private readonly probeKeys = new Map<string, ApiKey>();

  constructor(
    private readonly keys: KeyLookup,
    /** Base URL of this process's HTTP server, known once it listens. */
    private readonly selfUrl: () => string | undefined,
  ) {}

  /** The key lookup the API authenticates with: probe keys first, then the configuration. */
  lookup(): KeyLookup {
    return {
      find: (kind, id) => this.probeKeys.get(id) ?? this.keys.find(kind, id),
      sync: () => this.keys.sync(),
      isErased: (tenantId) => this.keys.isErased?.(tenantId) ?? false,
    };
  }

  async send(req: { method: string; url: string; headers?: Record<string, string>; body?: unknown }): Promise<ProbeAnswer> {
    const base = this.selfUrl();
    if (!base) throw new Error('the API is not listening yet');
    const payload = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    const res = await request(`${base}${req.url}`, { method: req.method as 'GET', headers: { ...(req.headers ?? {}) }, body: payload, signal: AbortSignal.timeout(30_000) });
    const text = await res.body.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return { status: res.statusCode, headers: res.headers as ProbeAnswer['headers'], body };
  }

  async withKey<T>(tenantId: string, scopes: string[], fn: (apiKey: string) => Promise<T>): Promise<T> {
    const { keyId, apiKey, sha256 } = newApiKey();
    const now = new Date();
    this.probeKeys.set(keyId, {
      kind: 'api_key',
      id: keyId,
      tenant_id: tenantId,
      secret_sha256: sha256,
      scopes: scopes as Scope[],
      resource_ids: null,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + 60_000).toISOString(),
    });
    try {
      return await fn(apiKey);
    } finally {
      this.probeKeys.delete(keyId);
    }
  }
}
