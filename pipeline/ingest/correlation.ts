import { newId } from '../../core/ids';

const CORRELATION_PATTERN = /^[\x21-\x7e]{1,128}$/;
const TRACEPARENT_PATTERN = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * The correlation id of an incoming request: X-Correlation-Id when it is a sane token,
 * else the trace id of a W3C traceparent, else a new one.
 */
export function correlationIdOf(headers: { 'x-correlation-id'?: string | string[]; traceparent?: string | string[] }): string {
  const given = headers['x-correlation-id'];
  if (typeof given === 'string' && CORRELATION_PATTERN.test(given.trim())) return given.trim();
  const trace = headers.traceparent;
  if (typeof trace === 'string') {
    const m = TRACEPARENT_PATTERN.exec(trace.trim().toLowerCase());
    if (m?.[1] && !/^0+$/.test(m[1])) return m[1];
  }
  return newId('correlation');
}
