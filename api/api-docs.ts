import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RequestHandler } from 'express';

/** Redoc's standalone bundle, found as node finds the package: from the sources and from dist/ alike. */
export const REDOC_BUNDLE = require.resolve('redoc/bundles/redoc.standalone.js');

/**
 * What Redoc needs and nothing more, as found by running it in Chromium: everything from this
 * origin (the page, its two scripts, the document), no inline script and no eval. Three
 * allowances: inline styles, since styled-components renders Redoc's styles as style elements it
 * inserts (without them Redoc stops at its first component); `data:` images, its icons; a `blob:`
 * worker, in which its search builds its index. No plugin, no framing, no form posting anywhere.
 */
export const API_DOCS_CONTENT_SECURITY_POLICY =
  "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hookline API reference</title>
<link rel="icon" href="/ui/favicon.svg" type="image/svg+xml">
<script src="/docs/redoc.standalone.js" defer></script>
<script src="/docs/init.js" defer></script>
</head>
<body>
<div id="redoc"></div>
</body>
</html>
`;

// the same document GET /v1/openapi.json serves, rendered in the page's only element
const INIT = `document.body.style.margin = '0';
Redoc.init('/v1/openapi.json', {
  hideDownloadButton: false,
  expandResponses: '200,201',
  requiredPropsFirst: true,
  jsonSampleExpandLevel: 3,
  hideHostname: true,
}, document.getElementById('redoc'));
`;

/**
 * The bundle as served. Its one resource from another origin is Redocly's logo beside the credit
 * line of the menu: the page loads nothing from elsewhere (no visitor's address goes to a third
 * party), so the logo's address becomes one that fails at once, which makes Redoc drop the image;
 * the credit line and its link stay.
 */
function servedBundle(source: string): string {
  return source.replaceAll('"https://cdn.redoc.ly/redoc/logo-mini.svg"', '"data:,"');
}

interface DocsFile {
  body: Buffer;
  type: string;
  etag: string;
}

function docsFile(body: Buffer, type: string): DocsFile {
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
}

/**
 * The API reference at /docs, mounted with `app.use('/docs', ...)`: GET /v1/openapi.json rendered
 * by Redoc, in the page. As the dashboard's (api/ui.ts), its three files are held in memory from
 * the start, so no request reaches the disk; `/docs` and `/docs/` are the page. They are
 * revalidated on every load (a new version is seen at once) and the bundle's ETag spares sending
 * its megabyte again.
 */
export function apiDocsHandler(bundle = REDOC_BUNDLE): RequestHandler {
  const files = new Map<string, DocsFile>([
    ['/', docsFile(Buffer.from(PAGE), 'text/html; charset=utf-8')],
    ['/init.js', docsFile(Buffer.from(INIT), 'text/javascript; charset=utf-8')],
    ['/redoc.standalone.js', docsFile(Buffer.from(servedBundle(readFileSync(bundle, 'utf8'))), 'text/javascript; charset=utf-8')],
  ]);
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const file = files.get(req.path);
    if (!file) return next();
    res.setHeader('content-type', file.type);
    res.setHeader('content-security-policy', API_DOCS_CONTENT_SECURITY_POLICY);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    res.setHeader('x-frame-options', 'DENY');
    res.setHeader('cross-origin-opener-policy', 'same-origin');
    res.setHeader('cache-control', 'no-cache');
    res.setHeader('etag', file.etag);
    if (req.headers['if-none-match'] === file.etag) return void res.status(304).end();
    res.setHeader('content-length', String(file.body.length));
    res.status(200).end(req.method === 'HEAD' ? undefined : file.body);
  };
}
