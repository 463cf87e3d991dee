/**
 * One error type for the whole service. `slug` names the problem type of RFC 9457
 * (`<ERROR_BASE>/errors/<slug>`), `retriable` tells a stage runner whether trying again
 * can help. The API maps it to a problem document in exactly one place.
 */
export type ErrorSlug =
  | 'validation-error'
  | 'unauthorized'
  | 'insufficient-scope'
  | 'permission-denied'
  | 'write-tool-disabled'
  | 'quota-exceeded'
  | 'tenant-suspended'
  | 'not-found'
  | 'method-not-allowed'
  | 'not-acceptable'
  | 'conflict'
  | 'idempotency-conflict'
  | 'precondition-failed'
  | 'payload-too-large'
  | 'unsupported-media-type'
  | 'unprocessable-entity'
  | 'request-header-fields-too-large'
  | 'rate-limit-exceeded'
  | 'internal-error'
  | 'service-unavailable';

export const STATUS_OF: Record<ErrorSlug, number> = {
  'validation-error': 400,
  unauthorized: 401,
  'insufficient-scope': 403,
  'permission-denied': 403,
  'write-tool-disabled': 403,
  'quota-exceeded': 403,
  'tenant-suspended': 403,
  'not-found': 404,
  'method-not-allowed': 405,
  'not-acceptable': 406,
  conflict: 409,
  'idempotency-conflict': 409,
  'precondition-failed': 412,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'unprocessable-entity': 422,
  'request-header-fields-too-large': 431,
  'rate-limit-exceeded': 429,
  'internal-error': 500,
  'service-unavailable': 503,
};

export const TITLE_OF: Record<ErrorSlug, string> = {
  'validation-error': 'Validation error',
  unauthorized: 'Unauthorized',
  'insufficient-scope': 'Insufficient scope',
  'permission-denied': 'Permission denied',
  'write-tool-disabled': 'Write tool disabled',
  'quota-exceeded': 'Quota exceeded',
  'tenant-suspended': 'Tenant suspended',
  'not-found': 'Not found',
  'method-not-allowed': 'Method not allowed',
  'not-acceptable': 'Not acceptable',
  conflict: 'Conflict',
  'idempotency-conflict': 'Idempotency conflict',
  'precondition-failed': 'Precondition failed',
  'payload-too-large': 'Payload too large',
  'unsupported-media-type': 'Unsupported media type',
  'unprocessable-entity': 'Unprocessable entity',
  'request-header-fields-too-large': 'Request header fields too large',
  'rate-limit-exceeded': 'Rate limit exceeded',
  'internal-error': 'Internal error',
  'service-unavailable': 'Service unavailable',
};

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly slug: ErrorSlug,
    message: string,
    /** Extra members of the problem document, e.g. `required_scope`. */
    readonly extra: Record<string, unknown> = {},
    readonly retriable = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AppError';
    this.status = STATUS_OF[slug];
  }
}

export function validationError(errors: FieldError[]): AppError {
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return new AppError('validation-error', detail || 'the request is malformed', { errors });
}

/**
 * A well-formed request whose values cannot be used (a pattern the regex engine refuses, a URL
 * that points back at the service): 422, naming each field as a validation error does.
 */
export function unprocessable(errors: FieldError[]): AppError {
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return new AppError('unprocessable-entity', detail || 'the request cannot be processed', { errors });
}

export function notFound(what: string): AppError {
  return new AppError('not-found', `${what} does not exist`);
}

/** An infrastructure failure that may pass (broker leader change, timeout, connection reset). */
export class TransientError extends Error {
  readonly retriable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransientError';
  }
}

export function isRetriable(err: unknown): boolean {
  if (err instanceof AppError || err instanceof TransientError) return err.retriable;
  if (typeof err === 'object' && err !== null && 'retriable' in err) return Boolean((err as { retriable: unknown }).retriable);
  return false;
}
