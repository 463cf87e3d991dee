import { rotateSecrets, type RotationReport } from '../platform/config-store/rotate-secrets';
import { resealEvidenceKey } from '../platform/evidence/signing-key';
import { connect } from './connect';

/**
 * `secrets rotate`: re-seals every stored secret under the first key of SECRETS_KEK. Run it once
 * every process holds the new key (first) and the old one (after it); then the old one can go.
 */
export async function secretsRotate(): Promise<RotationReport & { evidence_signing_key: string }> {
  const ctx = await connect();
  try {
    const report = await rotateSecrets(ctx.store);
    return { ...report, evidence_signing_key: resealEvidenceKey(ctx.config.dataDir, ctx.keyring) };
  } finally {
    await ctx.close();
  }
}
