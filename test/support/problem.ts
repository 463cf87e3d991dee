import { STATUS_OF, TITLE_OF, type ErrorSlug } from '../../core/errors';

/** An HTTP answer reduced to what the problem rules look at, from fetch or from node:http. */
export interface AnswerLike {
  status: number;
  headers: Headers | Record<string, string | string[] | undefined>;
  body: any;
}

export function headerOf(answer: AnswerLike, name: string): string | undefined {
  const h = answer.headers;
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  const v = (h as Record<string, string | string[] | undefined>)[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/**
 * Everything that makes an error answer not a well-formed problem document (spec part 7):
 * media type application/problem+json, `type` = `<errorBase>/errors/<slug>` with a known slug
 * whose status is the HTTP status, a title, `status` equal to the HTTP status, a detail, and
 * `instance` equal to the X-Request-Id header. An answer replayed for an Idempotency-Key is the
 * original one (rule 1 of part 4), so its `instance` is the first request's id. Returns no
 * entries for a well-formed one. `head`: a HEAD answer has no body, only its headers are checked.
 */
export function problemViolations(answer: AnswerLike, errorBase: string, options: { head?: boolean } = {}): string[] {
  const out: string[] = [];
  const contentType = headerOf(answer, 'content-type') ?? '';
  const requestId = headerOf(answer, 'x-request-id');
  if (!/^application\/problem\+json(\s*;|$)/i.test(contentType)) out.push(`content-type is "${contentType}", not application/problem+json`);
  if (!requestId || !/^req_[0-9a-z]{26}$/.test(requestId)) out.push(`X-Request-Id header is "${String(requestId)}"`);
  if (options.head) return out;
  const body = answer.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    out.push(`body is not a JSON object: ${JSON.stringify(body)?.slice(0, 200)}`);
    return out;
  }
  const prefix = `${errorBase}/errors/`;
  const slug = typeof body.type === 'string' && body.type.startsWith(prefix) ? (body.type.slice(prefix.length) as ErrorSlug) : undefined;
  if (!slug || !(slug in STATUS_OF)) out.push(`type "${String(body.type)}" is not ${prefix}<known slug>`);
  else {
    if (STATUS_OF[slug] !== answer.status) out.push(`type ${slug} belongs to status ${STATUS_OF[slug]}, the answer is ${answer.status}`);
    if (body.title !== TITLE_OF[slug]) out.push(`title "${String(body.title)}" is not "${TITLE_OF[slug]}"`);
  }
  if (typeof body.title !== 'string' || body.title === '') out.push('title is missing');
  if (body.status !== answer.status) out.push(`status member ${String(body.status)} differs from HTTP status ${answer.status}`);
  if (typeof body.detail !== 'string' || body.detail === '') out.push('detail is missing');
  const replayed = headerOf(answer, 'idempotent-replayed') === 'true';
  if (replayed) {
    if (typeof body.instance !== 'string' || !/^req_[0-9a-z]{26}$/.test(body.instance)) out.push(`instance "${String(body.instance)}" is not a request id`);
  } else if (body.instance !== requestId) out.push(`instance "${String(body.instance)}" differs from X-Request-Id "${String(requestId)}"`);
  if (JSON.stringify(body).match(/at .*\.(ts|js):\d+/)) out.push('body carries a stack trace');
  if (slug === 'validation-error') {
    if (!Array.isArray(body.errors) || body.errors.length === 0 || body.errors.some((e: any) => typeof e?.field !== 'string' || typeof e?.message !== 'string')) {
      out.push(`validation-error without errors[{field,message}]: ${JSON.stringify(body.errors)}`);
    }
  }
  if (slug === 'insufficient-scope' && typeof body.required_scope !== 'string') out.push('insufficient-scope without required_scope');
  if (slug === 'permission-denied' && typeof body.resource_id !== 'string') out.push('permission-denied without resource_id');
  if (slug === 'idempotency-conflict' && typeof body.idempotency_key !== 'string') out.push('idempotency-conflict without idempotency_key');
  if (slug === 'rate-limit-exceeded' && !Number.isInteger(body.retry_after_seconds)) out.push('rate-limit-exceeded without integer retry_after_seconds');
  return out;
}

/** Asserts a problem answer of this status and slug (jest). */
export function expectProblem(answer: AnswerLike, status: number, slug: ErrorSlug, errorBase: string): void {
  const context = `${answer.status} ${JSON.stringify(answer.body)?.slice(0, 400)}`;
  expect({ status: answer.status, context }).toEqual({ status, context });
  expect(problemViolations(answer, errorBase)).toEqual([]);
  expect(answer.body.type).toBe(`${errorBase}/errors/${slug}`);
}

/** An ISO 8601 UTC timestamp as JavaScript writes it (`2026-01-02T03:04:05.678Z`). */
export function isIsoUtc(value: unknown): boolean {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/.test(value) && !Number.isNaN(Date.parse(value));
}
