import { header, type SignedRequest } from '../verification';
import { parseJson, stringAt } from './json-body';

/**
 * Event type for providers without a convention of their own (generic, none): the header named by
 * `event_type_header`, else the body field at `event_type_field`, else null.
 */
export function configuredEventType(req: SignedRequest, config: Record<string, unknown>): string | null {
  const { event_type_header: headerName, event_type_field: field } = config;
  if (typeof headerName === 'string' && headerName) {
    const value = header(req.headers, headerName)?.trim();
    if (value) return value;
  }
  if (typeof field === 'string' && field) return stringAt(parseJson(req.body), field);
  return null;
}
