// The API as this page calls it: the key as a Bearer token, JSON both ways, problem documents
// (RFC 9457) turned into errors that say what the API said.

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
  constructor(key, tenantId = null) {
    this.key = key;
    this.tenantId = tenantId;
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
    const headers = { authorization: `Bearer ${this.key}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = contentType;
    if (ifMatch) headers['if-match'] = ifMatch;
    const res = await fetch(`${path}${qs.size > 0 ? `?${qs}` : ''}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
    const text = await res.text();
    let parsed = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = { detail: text.slice(0, 200) };
    }
    if (!res.ok) throw new ApiError(res.status, parsed);
    return { body: parsed, etag: res.headers.get('etag') };
  }

  me() {
    return this.request('GET', '/v1/me');
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

  /** A JSON merge patch (RFC 7396), only while the resource is at `ifMatch` when given: `{ body, etag }`. */
  patch(path, body, { ifMatch } = {}) {
    return this.exchange('PATCH', this.tenantPath(path), { body, contentType: 'application/merge-patch+json', ifMatch });
  }

  /** The destination types with their config schemas (GET /v1/destination-types, not a tenant's). */
  destinationTypes() {
    return this.request('GET', '/v1/destination-types');
  }
}
