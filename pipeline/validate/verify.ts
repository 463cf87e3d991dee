import type { Ingester } from '../../core/model';
import { verifyGenericHmac } from './providers/generic';
import { verifyGithub } from './providers/github';
import { verifyNone } from './providers/none';
import { verifyShopify } from './providers/shopify';
import { verifySlack } from './providers/slack';
import { verifyStandardWebhooks } from './providers/standard-webhooks';
import { verifyStripe } from './providers/stripe';
import { reject, type SignedRequest, type Verdict } from './verification';

/** Verifies a request by its ingester's provider. */
export function verifyRequest(ingester: Ingester, req: SignedRequest): Verdict {
  const { provider, config } = ingester;
  // no default branch: a provider added to PROVIDERS without a case fails to compile at `never` below
  switch (provider) {
    case 'generic':
      return verifyGenericHmac(req, config);
    case 'stripe':
      return verifyStripe(req, config);
    case 'github':
      return verifyGithub(req, config);
    case 'shopify':
      return verifyShopify(req, config);
    case 'slack':
      return verifySlack(req, config);
    case 'standard-webhooks':
      return verifyStandardWebhooks(req, config);
    case 'none':
      return verifyNone(req, config);
  }
  // unreachable for well-typed configs; a record written by a newer build must fail, not crash the stage
  const unknown: never = provider;
  return reject(`provider ${String(unknown)} is not supported by this build`);
}
