import type { AvroType } from './avro';

export const COMPATIBILITY_LEVELS = [
  'NONE',
  'BACKWARD',
  'BACKWARD_TRANSITIVE',
  'FORWARD',
  'FORWARD_TRANSITIVE',
  'FULL',
  'FULL_TRANSITIVE',
] as const;

export type CompatibilityLevel = (typeof COMPATIBILITY_LEVELS)[number];

/** Confluent's default, kept so clients that assume it see the same behaviour. */
export const DEFAULT_COMPATIBILITY: CompatibilityLevel = 'BACKWARD';

/** Confluent accepts levels in any case. */
export function parseCompatibilityLevel(value: unknown): CompatibilityLevel | undefined {
  if (typeof value !== 'string') return undefined;
  const upper = value.toUpperCase();
  return COMPATIBILITY_LEVELS.find((level) => level === upper);
}

export interface VersionedType {
  version: number;
  type: AvroType;
}

/**
 * Why `candidate` may not follow `previous` (oldest first) under `level`; empty when it may.
 * Non-transitive levels look only at the newest previous version, as Confluent does.
 */
export function compatibilityProblems(
  level: CompatibilityLevel,
  candidate: AvroType,
  previous: readonly VersionedType[],
): string[] {
  if (level === 'NONE') return [];
  const against = level.endsWith('_TRANSITIVE') ? previous : previous.slice(-1);
  const backward = level.startsWith('BACKWARD') || level.startsWith('FULL');
  const forward = level.startsWith('FORWARD') || level.startsWith('FULL');
  const problems: string[] = [];
  for (const old of against) {
    const cannotReadOld = backward ? resolutionError(candidate, old.type) : undefined;
    if (cannotReadOld) problems.push(`new schema cannot read data written with version ${old.version}: ${cannotReadOld}`);
    const oldCannotRead = forward ? resolutionError(old.type, candidate) : undefined;
    if (oldCannotRead) problems.push(`version ${old.version} cannot read data written with new schema: ${oldCannotRead}`);
  }
  return problems;
}

/** avsc refuses to build a resolver exactly when the reader cannot decode the writer's data. */
function resolutionError(reader: AvroType, writer: AvroType): string | undefined {
  try {
    reader.createResolver(writer);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
