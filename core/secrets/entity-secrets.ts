import type { Entity } from '../model';
import { isSealed, open, seal, sealedKeyId, type SecretPlace } from './envelope';
import { SECRET_FIELDS } from './fields';
import type { Keyring } from './keyring';

/**
 * The secret members of a configuration entity: a destination's signing secrets (current and
 * the one a rotation replaced) and credentials,
 * an ingester's provider secrets, a tenant's data key material. Each is sealed on its own, bound to its entity and member, as
 * the JSON of its value (a string, a list of strings, an object).
 */
type Members = Record<string, unknown>;

function secretSlots(entity: Entity): { holder: 'entity' | 'config'; names: string[] } | undefined {
  if (entity.kind === 'destination') return { holder: 'entity', names: ['signing_secret', 'previous_signing_secret', 'auth'] };
  if (entity.kind === 'ingester') return { holder: 'config', names: Object.keys(entity.config).filter((k) => SECRET_FIELDS.test(k)) };
  if (entity.kind === 'data_key') return { holder: 'entity', names: ['material'] };
  return undefined;
}

function placeOf(entity: Entity, holder: string, name: string): SecretPlace {
  const tenant = entity.kind === 'tenant' ? entity.id : entity.tenant_id;
  return { kind: entity.kind, tenant, id: entity.id, field: holder === 'config' ? `config.${name}` : name };
}

function rewrite(entity: Entity, each: (value: unknown, place: SecretPlace) => unknown): Entity {
  const slots = secretSlots(entity);
  if (!slots || slots.names.length === 0) return entity;
  const copy = { ...entity } as Entity & Members;
  const members: Members = slots.holder === 'config' ? { ...(copy as Members).config as Members } : copy;
  for (const name of slots.names) {
    const value = members[name];
    if (value === undefined || value === null) continue;
    members[name] = each(value, placeOf(entity, slots.holder, name));
  }
  if (slots.holder === 'config') (copy as Members).config = members;
  return copy;
}

/** The entity as it is written to the config topic: every secret member sealed under the current key. */
export function sealEntity(ring: Keyring, entity: Entity): Entity {
  return rewrite(entity, (value, place) => (isSealed(value) ? value : seal(ring, place, JSON.stringify(value))));
}

/**
 * The entity as the service uses it in memory. A member written before secrets were sealed is
 * taken as it is (rotation seals it). A member that does not open throws, naming its key id.
 */
export function openEntity(ring: Keyring, entity: Entity): Entity {
  return rewrite(entity, (value, place) => (isSealed(value) ? (JSON.parse(open(ring, place, value).toString('utf8')) as unknown) : value));
}

/** The key ids the entity's sealed members are wrapped under, and how many members are still clear. */
export function sealingOf(entity: Entity): { keyIds: string[]; clear: number } {
  const keyIds: string[] = [];
  let clear = 0;
  rewrite(entity, (value) => {
    if (isSealed(value)) keyIds.push(sealedKeyId(value) ?? '?');
    else clear++;
    return value;
  });
  return { keyIds, clear };
}
