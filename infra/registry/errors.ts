/**
 * Errors in the shape the Confluent Schema Registry answers with (`{error_code, message}`),
 * because clients such as @kafkajs/confluent-schema-registry branch on status and code.
 */
export class RegistryError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'RegistryError';
  }
}

export const subjectNotFound = (subject: string) =>
  new RegistryError(404, 40401, `Subject '${subject}' not found.`);

export const versionNotFound = (version: number | string) =>
  new RegistryError(404, 40402, `Version ${version} not found.`);

export const schemaNotFound = (id?: number) =>
  new RegistryError(404, 40403, id === undefined ? 'Schema not found' : `Schema ${id} not found`);

export const subjectSoftDeleted = (subject: string) =>
  new RegistryError(404, 40404, `Subject '${subject}' was soft deleted.Set permanent=true to delete permanently`);

export const subjectNotSoftDeleted = (subject: string) =>
  new RegistryError(404, 40405, `Subject '${subject}' was not deleted first before being permanently deleted`);

export const versionSoftDeleted = (subject: string, version: number) =>
  new RegistryError(404, 40406, `Subject '${subject}' Version ${version} was soft deleted.Set permanent=true to delete permanently`);

export const versionNotSoftDeleted = (subject: string, version: number) =>
  new RegistryError(404, 40407, `Subject '${subject}' Version ${version} was not deleted first before being permanently deleted`);

export const subjectConfigNotFound = (subject: string) =>
  new RegistryError(404, 40408, `Subject '${subject}' does not have subject-level compatibility configured`);

export const incompatibleSchema = (subject: string, details: readonly string[]) =>
  new RegistryError(
    409,
    409,
    `Schema being registered is incompatible with an earlier schema for subject "${subject}", details: [${details.join(', ')}]`,
  );

export const invalidSchema = (detail: string) => new RegistryError(422, 42201, `Invalid schema: ${detail}`);

export const invalidVersion = (version: string) =>
  new RegistryError(
    422,
    42202,
    `The specified version '${version}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string "latest"`,
  );

export const invalidCompatibilityLevel = () =>
  new RegistryError(
    422,
    42203,
    'Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive',
  );
