import type { Kafka } from 'kafkajs';
import { splitNote, type NoteSigner } from '../../core/signed-note';
import type { AvroCodec } from '../avro/codec';
import { readLastRecord } from '../kafka/topic-table';

/**
 * Refuses a key kept under DATA_DIR (EVIDENCE_SIGNING_KEY unset) that did not sign this
 * deployment's log: its newest checkpoint names the key that signs the log (the signature line
 * carries the key name and key id). A process with another generated key would sign checkpoints
 * no client can check against the published key, or publish a key the log was never signed with:
 * the case of a second process started without the deployment's key, or a data dir lost. An
 * empty log has no key yet.
 */
export async function assertSignsLog(kafka: Kafka, codec: AvroCodec, topic: string, signer: NoteSigner): Promise<void> {
  const last = await readLastRecord(kafka, topic);
  if (!last) return;
  const { checkpoint } = await codec.decode('EvidenceBatch', last.value);
  const signers = splitNote(checkpoint).signatures;
  if (signers.some((s) => s.name === signer.name && s.keyId.equals(signer.keyId))) return;
  const named = signers.map((s) => `${s.name}+${s.keyId.toString('hex')}`).join(', ');
  throw new Error(
    `EVIDENCE_SIGNING_KEY is unset and this process's evidence key (${signer.name}+${signer.keyId.toString('hex')}, kept under DATA_DIR) is not the key that signed this deployment's evidence log (${named}): set EVIDENCE_SIGNING_KEY to that key in every process that runs the api or evidence stage`,
  );
}
