import { randomBytes } from 'node:crypto';
import { hmacOf } from '../hmac-keys';

/** A new destination signing secret: `whsec_` and 32 random bytes in base64 (Standard Webhooks). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/**
 * The `webhook-signature` value of the Standard Webhooks specification:
 * `v1,` + base64(HMAC-SHA256(secret, "<id>.<timestamp seconds>.<body>")).
 */
export function signStandardWebhook(secret: string, id: string, timestampSeconds: number, body: Buffer): string {
  const mac = hmacOf('sha256', `whsec:${secret}`, () => secretKey(secret));
  mac.update(`${id}.${timestampSeconds}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}
