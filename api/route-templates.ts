import type { Request } from 'express';

/** The bucket of every request that matches no known route: one per key, however the path is spelled. */
export const UNMATCHED_ROUTE = '* (unmatched)';

interface Template {
  method: string;
  key: string;
  segments: (string | null)[];
  literals: number;
}

/**
 * `METHOD /template` of a request, matched against known route templates (e.g. the OpenAPI
 * document's paths) case-insensitively after collapsing slashes, so that spelling a path in
 * another case, with doubled or trailing slashes, or with an arbitrary segment never earns a
 * fresh rate-limit bucket. Among matches the one with the most literal segments wins
 * (`/events/search` before `/events/:id`); anything else is {@link UNMATCHED_ROUTE}.
 */
export function routeTemplateOf(templates: readonly string[]): (req: Request) => string {
  const parsed = templates.map(parseTemplate).sort((a, b) => b.literals - a.literals);
  return (req) => {
    const method = req.method.toUpperCase();
    const segments = splitPath((req.originalUrl ?? req.url).split('?')[0] ?? '');
    const found = parsed.find((t) => (t.method === method || (method === 'HEAD' && t.method === 'GET')) && matches(t.segments, segments));
    return found?.key ?? UNMATCHED_ROUTE;
  };
}

/** OpenAPI paths as rate-limit templates: `{tenant_id}` is `:tenantId`, every other parameter `:id`. */
export function templatesOfOpenApi(paths: Record<string, object>): string[] {
  const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
  return Object.entries(paths).flatMap(([path, item]) => {
    const template = path.replace(/\{tenant_id\}/g, ':tenantId').replace(/\{[^}]+\}/g, ':id');
    return Object.keys(item).filter((m) => methods.includes(m)).map((m) => `${m.toUpperCase()} ${template}`);
  });
}

function parseTemplate(template: string): Template {
  const space = template.indexOf(' ');
  const method = template.slice(0, space).toUpperCase();
  const segments = splitPath(template.slice(space + 1)).map((s) => (s.startsWith(':') ? null : s.toLowerCase()));
  const path = `/${splitPath(template.slice(space + 1)).join('/')}`;
  return { method, key: `${method} ${path}`, segments, literals: segments.filter((s) => s !== null).length };
}

function splitPath(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function matches(template: (string | null)[], segments: string[]): boolean {
  if (template.length !== segments.length) return false;
  return template.every((t, i) => t === null || t === segments[i]!.toLowerCase());
}
