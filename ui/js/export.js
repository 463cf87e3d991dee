// Downloads an export (GET /v1/tenants/{tenant}/exports/{kind}) as a file, signed in as the page
// is: the API key as a Bearer token, or the portal session's cookie with X-Hookline-Portal. The
// answer is read whole (one page, bounded by the route's limit) and handed to the browser as a file.

import { ApiError } from './api.js';

export const EXPORT_FORMATS = [
  { value: 'csv', label: 'CSV' },
  { value: 'ndjson', label: 'NDJSON' },
  { value: 'parquet', label: 'Parquet' },
];

/** Fetches the export of `kind` with the search `filters` in `format` and saves it under the name the answer gives. */
export async function downloadExport(api, kind, filters, format) {
  const qs = new URLSearchParams({ format });
  for (const [k, v] of Object.entries(filters ?? {})) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const headers = {};
  if (api.isPortal) headers['x-hookline-portal'] = '1';
  else headers.authorization = `Bearer ${api.key}`;
  const res = await fetch(`${api.tenantPath(`/exports/${kind}`)}?${qs}`, { headers, credentials: api.isPortal ? 'same-origin' : 'omit', cache: 'no-store' });
  if (!res.ok) {
    let problem = null;
    try {
      problem = await res.json();
    } catch {
      problem = { detail: `the API answered ${res.status}` };
    }
    const err = new ApiError(res.status, problem);
    if (res.status === 401) api.onUnauthorized?.(err);
    throw err;
  }
  // a transfer cut short rejects here: nothing is saved
  const blob = await res.blob();
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? `${kind}.${format}`;
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return { name, bytes: blob.size, more: res.headers.get('hookline-next-cursor') !== null };
}
