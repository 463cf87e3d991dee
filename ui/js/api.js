// The API as this page calls it, JSON both ways, problem documents (RFC 9457) turned into errors
// that say what the API said. Signed in one of two ways: an API key, sent as a Bearer token and
// no cookie; or a portal session, whose HttpOnly cookie the browser sends on same-origin requests
// that carry `X-Hookline-Portal: 1` (without that header the API ignores the cookie, so another
// site cannot make the browser act with it).

export class ApiError extends Error {
  constructor(status, problem) {
    const slug = typeof problem?.type === 'string' ? problem.type.slice(problem.type.lastIndexOf('/') + 1) : '';
    super(problem?.detail ?? problem?.title ?? `the API answered ${status}`);
    this.status = status;
    this.slug = slug;
    this.problem = problem;
  }
}

export class Api {
  /** `key`: an API key; null: the portal session of this browser (see Api.portal). */
  constructor(key, tenantId = null) {
    this.key = key;
    this.tenantId = tenantId;
    /** Called with the error when the API no longer accepts the key or the session (401). */
    this.onUnauthorized = null;
  }

  /** The API as a portal session calls it: the session's cookie, never a key. */
  static portal() {
    return new Api(null);
  }

  get isPortal() {
    return this.key === null;
  }

  /** `/v1/tenants/{tenant}` + path. */
  tenantPath(path) {
    return `/v1/tenants/${encodeURIComponent(this.tenantId)}${path}`;
  }

  async request(method, path, options = {}) {
    return (await this.exchange(method, path, options)).body;
  }

  /** The answer with its ETag (the version a later If-Match names), or an ApiError. */
  async exchange(method, path, { query, body, contentType = 'application/json', ifMatch } = {}) {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
    const headers = { accept: 'application/json' };
    if (this.isPortal) headers['x-hookline-portal'] = '1';
    else headers.authorization = `Bearer ${this.key}`;
    if (body !== undefined) headers['content-type'] = contentType;
    if (ifMatch) headers['if-match'] = ifMatch;
    const res = await fetch(`${path}${qs.size > 0 ? `?${qs}` : ''}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: this.isPortal ? 'same-origin' : 'omit', cache: 'no-store' });
    const text = await res.text();
    let parsed = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = { detail: text.slice(0, 200) };
    }
    if (!res.ok) {
      const err = new ApiError(res.status, parsed);
      if (res.status === 401) this.onUnauthorized?.(err);
      throw err;
    }
    return { body: parsed, etag: res.headers.get('etag') };
  }

  me() {
    return this.request('GET', '/v1/me');
  }

  /** Trades a portal link's one-time code for the session's cookie: `{ tenant_id, expires_at, scopes, destination_ids }`. */
  openPortalSession(code) {
    return this.request('POST', '/v1/portal/session', { body: { code } });
  }

  /** Ends the portal session: the API clears its cookie. */
  closePortalSession() {
    return this.request('DELETE', '/v1/portal/session');
  }

  get(path, query) {
    return this.request('GET', this.tenantPath(path), { query });
  }

  post(path, body) {
    return this.request('POST', this.tenantPath(path), { body });
  }

  /** A tenant resource with its ETag: `{ body, etag }`. */
  getTagged(path) {
    return this.exchange('GET', this.tenantPath(path));
  }

  /** POST that also answers the ETag of what it created or changed: `{ body, etag }`. */
  postTagged(path, body) {
    return this.exchange('POST', this.tenantPath(path), { body });
  }

  /** A JSON merge patch (RFC 7396), only while the resource is at `ifMatch` when given: `{ body, etag }`. */
  patch(path, body, { ifMatch } = {}) {
    return this.exchange('PATCH', this.tenantPath(path), { body, contentType: 'application/merge-patch+json', ifMatch });
  }

  remove(path) {
    return this.request('DELETE', this.tenantPath(path));
  }

  /** The destination types with their config schemas (GET /v1/destination-types, not a tenant's). */
  destinationTypes() {
    return this.request('GET', '/v1/destination-types');
  }

  /** Every item of a tenant list, following its cursors (at most `pages` pages of 200). */
  async all(path, member, pages = 10) {
    const items = [];
    let cursor = null;
    for (let i = 0; i < pages; i++) {
      const answer = await this.get(path, { limit: 200, cursor });
      items.push(...answer[member]);
      cursor = answer.next_cursor;
      if (!cursor) break;
    }
    return items;
  }
}
