import type { components } from './schema';

/** One member of a request the API refused, as a 400 or 422 problem lists it. */
export type FieldError = components['schemas']['FieldError'];

/**
 * An RFC 9457 problem document, as the API answers every refused request: `type` ends in the
 * error's slug (`.../errors/not-found`); some types add members (`errors`, `required_scope`).
 */
export type Problem = components['schemas']['Problem'] & { errors?: FieldError[]; [member: string]: unknown };

/** Whether an answer's body is a problem document. */
export function isProblem(body: unknown): body is Problem {
  if (typeof body !== 'object' || body === null) return false;
  const p = body as Record<string, unknown>;
  return typeof p.type === 'string' && typeof p.title === 'string' && typeof p.status === 'number';
}

/** A non-2xx answer of the API, thrown by {@link unwrap}. */
export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The problem document; null when the body is none (an empty body, a proxy's page). */
  readonly problem: Problem | null;
  /** The body as answered: parsed JSON, else its text. */
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    const problem = isProblem(body) ? body : null;
    super(problem ? `${status} ${problem.title}: ${problem.detail}` : `the API answered ${status}`);
    this.status = status;
    this.problem = problem;
    this.body = body;
  }
}

/** What every call of the client resolves to: `data` on a 2xx answer, `error` (the body) on any other. */
export interface ApiResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a 2xx answer (undefined for 204 No Content); any other answer is thrown as a {@link ProblemError}. */
export function unwrap<T>(result: ApiResult<T>): T {
  if (result.response.ok) return result.data as T;
  throw new ProblemError(result.response.status, result.error);
}
