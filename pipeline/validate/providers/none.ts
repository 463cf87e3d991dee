import type { SignedRequest, Verdict } from '../verification';
import { configuredEventType } from './configured-event-type';

/** No signature to check (trusted networks, or senders that cannot sign); only the event type is read. */
export function verifyNone(req: SignedRequest, config: Record<string, unknown>): Verdict {
  return { ok: true, eventType: configuredEventType(req, config) };
}
