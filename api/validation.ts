import { validationError, type FieldError } from '../core/errors';

/** Small checks for request bodies; all problems of one body are reported together. */
export class BodyChecker {
  readonly errors: FieldError[] = [];
  readonly body: Record<string, unknown>;

  constructor(body: unknown) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      this.errors.push({ field: 'body', message: 'must be a JSON object' });
      this.body = {};
    } else {
      this.body = body as Record<string, unknown>;
    }
  }

  string(field: string, options: { required?: boolean; max?: number } = {}): string | undefined {
    const v = this.body[field];
    if (v === undefined || v === null) {
      if (options.required) this.errors.push({ field, message: 'is required' });
      return undefined;
    }
    if (typeof v !== 'string') {
      this.errors.push({ field, message: 'must be a string' });
      return undefined;
    }
    if (options.required && v.trim() === '') this.errors.push({ field, message: 'must not be empty' });
    if (options.max !== undefined && v.length > options.max) this.errors.push({ field, message: `must be at most ${options.max} characters` });
    return v;
  }

  url(field: string, options: { required?: boolean } = {}): string | undefined {
    const v = this.string(field, { ...options, max: 2048 });
    if (v === undefined) return undefined;
    try {
      const u = new URL(v);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') this.errors.push({ field, message: 'must be an http or https URL' });
      else if (u.username || u.password) this.errors.push({ field, message: 'must not carry credentials' });
    } catch {
      this.errors.push({ field, message: 'must be an absolute URL' });
    }
    return v;
  }

  object(field: string, options: { required?: boolean } = {}): Record<string, unknown> | undefined {
    const v = this.body[field];
    if (v === undefined || v === null) {
      if (options.required) this.errors.push({ field, message: 'is required' });
      return undefined;
    }
    if (typeof v !== 'object' || Array.isArray(v)) {
      this.errors.push({ field, message: 'must be an object' });
      return undefined;
    }
    return v as Record<string, unknown>;
  }

  stringArray(field: string): string[] | undefined {
    const v = this.body[field];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      this.errors.push({ field, message: 'must be an array of strings' });
      return undefined;
    }
    return v as string[];
  }

  oneOf<T extends string>(field: string, allowed: readonly T[], options: { required?: boolean } = {}): T | undefined {
    const v = this.string(field, options);
    if (v === undefined) return undefined;
    if (!(allowed as readonly string[]).includes(v)) {
      this.errors.push({ field, message: `must be one of ${allowed.join(', ')}` });
      return undefined;
    }
    return v as T;
  }

  /**
   * Refuses every member not in `allowed`, each named in the errors. Routes allow what they
   * write and what their GET shows (read-only members such as `id` or `created_at` are accepted
   * and left as stored), so an object read can be sent back as it was.
   */
  only(allowed: readonly string[]): void {
    for (const k of Object.keys(this.body)) if (!allowed.includes(k)) this.errors.push({ field: k, message: 'is not a member of this body' });
  }

  fail(field: string, message: string): void {
    this.errors.push({ field, message });
  }

  /** Throws a 400 validation-error listing every problem found so far. */
  done(): void {
    if (this.errors.length > 0) throw validationError(this.errors);
  }
}
