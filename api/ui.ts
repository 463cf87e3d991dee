import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RequestHandler } from 'express';
import { REPO_ROOT } from '../core/paths';

/** Where the dashboard's files are: plain HTML, CSS and ES modules, served as they are. */
export const UI_DIR = path.join(REPO_ROOT, 'ui');

/**
 * Everything the page loads comes from this origin, and nothing else runs: no inline script or
 * style, no plugin, no framing, no form posting elsewhere. Images may also come over https (a
 * tenant's logo in its portal).
 */
export const UI_CONTENT_SECURITY_POLICY = "default-src 'self'; img-src 'self' https: data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

/** The policy of a portal page its tenant lets `origins` frame. */
export function framedPolicy(origins: readonly string[]): string {
  return UI_CONTENT_SECURITY_POLICY.replace("frame-ancestors 'none'", `frame-ancestors ${origins.join(' ')}`);
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
};

interface UiFile {
  body: Buffer;
  type: string;
}

/** Every file of the folder with a known type, by its path under /ui (`/js/app.js`). */
function readFiles(dir: string, prefix = ''): Map<string, UiFile> {
  const files = new Map<string, UiFile>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const at = `${prefix}/${entry.name}`;
    if (entry.isDirectory()) {
      for (const [k, v] of readFiles(path.join(dir, entry.name), at)) files.set(k, v);
      continue;
    }
    const type = TYPES[path.extname(entry.name)];
    if (entry.isFile() && type) files.set(at, { body: readFileSync(path.join(dir, entry.name)), type });
  }
  return files;
}

/**
 * The dashboard at /ui, mounted with `app.use('/ui', ...)`. The files are read once, so a
 * request can only ever get one of them (no path is resolved against the disk); `/ui` and
 * `/ui/` are the page. The page signs in with an API key and calls the API like any client.
 */
export function uiHandler(dir = UI_DIR, frameAncestorsOf: (tenantId: string) => readonly string[] = () => []): RequestHandler {
  const files = readFiles(dir);
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const file = files.get(req.path === '/' ? '/index.html' : req.path);
    if (!file) return next();
    // a portal link names its tenant (`?tenant=`): only that tenant's allowed origins may frame it
    const tenant = typeof req.query.tenant === 'string' ? req.query.tenant : undefined;
    const origins = tenant ? frameAncestorsOf(tenant) : [];
    res.setHeader('content-type', file.type);
    res.setHeader('content-security-policy', origins.length > 0 ? framedPolicy(origins) : UI_CONTENT_SECURITY_POLICY);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    if (origins.length === 0) res.setHeader('x-frame-options', 'DENY');
    res.setHeader('cross-origin-opener-policy', 'same-origin');
    res.setHeader('cache-control', 'no-cache');
    res.setHeader('content-length', String(file.body.length));
    res.status(200).end(req.method === 'HEAD' ? undefined : file.body);
  };
}
