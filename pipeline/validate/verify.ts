import type { Ingester } from '../../core/model';
import { verifyGenericHmac } from './providers/generic';
import type { SignedRequest, Verdict } from './verification';

/** Verifies a request by its ingester's provider. */
export function verifyRequest(ingester: Ingester, req: SignedRequest): Verdict {
  switch (ingester.provider) {
    case 'none':
      return { ok: true, eventType: null };
    case 'generic':
      return verifyGenericHmac(req, ingester.config);
    default:
      return { ok: false, reason: `provider ${ingester.provider} verification is not available in this build` };
  }
}
