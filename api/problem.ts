import { STATUS_CODES, maxHeaderSize, type ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { AppError, TITLE_OF, type ErrorSlug } from '../core/errors';
import { errorMessage, type Logger } from '../core/log';

/** Maps every error to an RFC 9457 problem document; the one place that does so. */
export function problemHandler(errorBase: string | (() => string), log: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    writeProblem(res, typeof errorBase === 'function' ? errorBase() : errorBase, err, String(res.getHeader('x-request-id') ?? ''), log, req.path);
  };
}

/** Answers `err` as a problem document on a bare node:http response (the framework's too). */
export function writeProblem(res: ServerResponse, errorBase: string, err: unknown, requestId: string, log: Logger, path?: string): void {
  const appError = toAppError(err);
  if (appError.slug === 'internal-error') {
    log.error('unexpected error', { request_id: requestId, method: res.req?.method, path: path ?? res.req?.url, error: errorMessage(err), stack: err instanceof Error ? err.stack : undefined });
  }
  if (res.headersSent) {
    res.end();
    return;
  }
  // a refusal that names when to try again says it in the header too (over a limit, Kafka away)
  if ((appError.slug === 'rate-limit-exceeded' || appError.slug === 'service-unavailable') && typeof appError.extra.retry_after_seconds === 'number') {
    res.setHeader('retry-after', String(appError.extra.retry_after_seconds));
  }
  const body = JSON.stringify(problemBody(errorBase, appError.slug, appError.message, requestId, appError.extra));
  res.statusCode = appError.status;
  res.setHeader('content-type', 'application/problem+json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.end(body);
}

export function problemBody(errorBase: string, slug: ErrorSlug, detail: string, requestId: string, extra: Record<string, unknown> = {}) {
  return {
    type: `${errorBase}/errors/${slug}`,
    title: TITLE_OF[slug],
    status: new AppError(slug, '').status,
    detail,
    instance: requestId,
    ...extra,
  };
}

/**
 * The raw HTTP answer to a request Node's parser refused before any route saw it (the server's
 * `clientError`): headers over the server's limit are 431, anything else that is not HTTP 400.
 */
export function parserRefusalAnswer(errorBase: string, err: NodeJS.ErrnoException, requestId: string): string {
  const refusal = err.code === 'HPE_HEADER_OVERFLOW'
    ? new AppError('request-header-fields-too-large', `the request line and headers are larger than the ${maxHeaderSize} bytes this server accepts`)
    : new AppError('validation-error', 'the request could not be parsed as HTTP', { errors: [{ field: 'request', message: 'is not valid HTTP' }] });
  const body = JSON.stringify(problemBody(errorBase, refusal.slug, refusal.message, requestId, refusal.extra));
  return `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\nContent-Type: application/problem+json\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

interface HttpErrorLike {
  type?: string;
  status?: number;
  statusCode?: number;
  expose?: boolean;
}

/** Errors of body parsers and of the service itself become typed errors; anything else is a 500. */
function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as HttpErrorLike;
  if (e && typeof e === 'object') {
    if (e.type === 'entity.too.large') return new AppError('payload-too-large', 'the request body is larger than allowed');
    if (e.type === 'entity.parse.failed') return new AppError('validation-error', 'the request body is not valid JSON', { errors: [{ field: 'body', message: 'invalid JSON' }] });
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') return new AppError('unsupported-media-type', 'the request body encoding is not supported');
    const status = e.status ?? e.statusCode;
    // a path segment that is not valid percent-encoding (the router's decodeURIComponent)
    if (err instanceof URIError || (status === 400 && !e.expose && e.type === undefined)) {
      return new AppError('validation-error', 'the request path is not valid percent-encoding', { errors: [{ field: 'path', message: 'is not valid percent-encoding' }] });
    }
    if (e.expose && status === 400) return new AppError('validation-error', 'the request is malformed', { errors: [{ field: 'body', message: errorMessage(err) }] });
  }
  return new AppError('internal-error', 'an unexpected error occurred; quote the instance when reporting it');
}
