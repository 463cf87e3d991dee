import { inspect } from 'node:util';
import { REDACTED_VALUE } from './secrets/redacted-headers';

/**
 * A value that carries credentials, held so that whatever serializes the object around it (a log
 * line's field, JSON.stringify, util.inspect) writes `[redacted]`: only `reveal()` gives it.
 */
export class Concealed<T> {
  readonly #value: T;
  constructor(value: T) {
    this.#value = value;
  }
  reveal(): T {
    return this.#value;
  }
  toJSON(): string {
    return REDACTED_VALUE;
  }
  toString(): string {
    return REDACTED_VALUE;
  }
  [inspect.custom](): string {
    return REDACTED_VALUE;
  }
}

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What Node lets a header value hold: tab, visible ASCII and space, latin-1. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]+$/;

/**
 * The headers of an OTEL_EXPORTER_OTLP_*HEADERS value as OpenTelemetry writes them:
 * comma-separated `name=value` pairs, each part trimmed, values percent-decoded (`%20` for a
 * space, `%2C` for a comma; `+` stays `+`). Names are kept lower-case, as HTTP compares them.
 * Every problem is named by the member's position or the header's name, never by a value (the
 * values are credentials; a malformed member may be one whole): an empty member is skipped, and a
 * member without `=`, an empty value, a bad percent-escape or a name given twice are refused.
 */
export function parseOtlpHeaders(text: string): { headers: Record<string, string>; errors: string[] } {
  // no prototype: a header may be named `constructor`
  const headers = Object.create(null) as Record<string, string>;
  const errors: string[] = [];
  const members = text.split(',');
  members.forEach((member, i) => {
    if (member.trim() === '') return;
    const at = `member ${i + 1} of ${members.length}`;
    const eq = member.indexOf('=');
    const name = eq > 0 ? member.slice(0, eq).trim() : '';
    if (!HEADER_NAME.test(name)) {
      errors.push(`${at} is not name=value with an HTTP header name (its text is not shown: it may hold a credential)`);
      return;
    }
    const key = name.toLowerCase();
    let value: string;
    try {
      value = decodeURIComponent(member.slice(eq + 1).trim());
    } catch {
      errors.push(`${at} (${key}): its value has a malformed percent-escape (write % as %25)`);
      return;
    }
    if (value === '') errors.push(`${at} (${key}): the value is empty`);
    else if (!HEADER_VALUE.test(value)) errors.push(`${at} (${key}): the value holds a character an HTTP header cannot carry`);
    else if (key in headers) errors.push(`${at} (${key}): the header is given twice`);
    else headers[key] = value;
  });
  return { headers, errors };
}
