import { Router, type Request, type Response } from 'express';
import type { SchemaReference } from './avro';
import { compatibilityProblems, DEFAULT_COMPATIBILITY, parseCompatibilityLevel } from './compatibility';
import {
  invalidCompatibilityLevel,
  invalidSchema,
  invalidVersion,
  schemaNotFound,
  subjectConfigNotFound,
  subjectNotFound,
  versionNotFound,
} from './errors';
import { isReference, type SchemaVersion } from './records';
import type { RegistryStore } from './store';

export const RESPONSE_CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

/** A Buffer body keeps Express from appending a charset to the Confluent media type. */
function send(res: Response, body: unknown): void {
  res.type(RESPONSE_CONTENT_TYPE).send(Buffer.from(JSON.stringify(body)));
}

const flag = (req: Request, name: string) => req.query[name] === 'true';

function versionParam(raw: string): number | 'latest' {
  if (raw === 'latest' || raw === '-1') return 'latest';
  const n = /^[0-9]{1,10}$/.test(raw) ? Number(raw) : 0;
  if (n >= 1 && n <= 2 ** 31 - 1) return n;
  throw invalidVersion(raw);
}

function idParam(raw: string): number {
  if (!/^[0-9]{1,10}$/.test(raw)) throw schemaNotFound();
  return Number(raw);
}

/** `{schema, schemaType?, references?}`; only Avro is served. */
function schemaBody(body: unknown): { schema: string; references: SchemaReference[] } {
  const b = (body ?? {}) as Record<string, unknown>;
  if (typeof b.schema !== 'string' || b.schema.trim() === '') throw invalidSchema('empty schema');
  if (b.schemaType != null && String(b.schemaType).toUpperCase() !== 'AVRO') {
    throw invalidSchema(`schema type '${String(b.schemaType)}' is not supported; only AVRO is`);
  }
  const refs = b.references ?? [];
  if (!Array.isArray(refs) || !refs.every(isReference)) throw invalidSchema('malformed references');
  return { schema: b.schema, references: refs };
}

/** Confluent omits schemaType for Avro and references when there are none. */
function versionBody(v: SchemaVersion): Record<string, unknown> {
  const body: Record<string, unknown> = { subject: v.subject, version: v.version, id: v.id, schema: v.schema };
  if (v.references.length > 0) body.references = v.references;
  return body;
}

export function registryRoutes(store: RegistryStore): Router {
  const { state } = store;
  const router = Router();

  const existingVersion = (subject: string, raw: string, includeDeleted: boolean): SchemaVersion => {
    const version = versionParam(raw);
    if (state.versions(subject, includeDeleted).length === 0) throw subjectNotFound(subject);
    const found = state.version(subject, version, includeDeleted);
    if (!found) throw versionNotFound(raw);
    return found;
  };

  const byId = (raw: string): SchemaVersion => {
    const id = idParam(raw);
    const found = state.schemaById(id);
    if (!found) throw schemaNotFound(id);
    return found;
  };

  router.get('/', (_req, res) => send(res, {}));
  router.get('/schemas/types', (_req, res) => send(res, ['AVRO']));

  router.get('/schemas/ids/:id', (req, res) => {
    const { schema, references } = byId(req.params.id);
    send(res, references.length > 0 ? { schema, references } : { schema });
  });
  router.get('/schemas/ids/:id/versions', (req, res) => {
    const { id } = byId(req.params.id);
    send(res, state.usesOf(id, flag(req, 'deleted')).map((v) => ({ subject: v.subject, version: v.version })));
  });
  router.get('/schemas/ids/:id/subjects', (req, res) => {
    const { id } = byId(req.params.id);
    send(res, [...new Set(state.usesOf(id, flag(req, 'deleted')).map((v) => v.subject))].sort());
  });

  router.get('/subjects', (req, res) => send(res, state.subjectNames(flag(req, 'deleted'))));

  router.get('/subjects/:subject/versions', (req, res) => {
    const versions = state.versions(req.params.subject, flag(req, 'deleted'));
    if (versions.length === 0) throw subjectNotFound(req.params.subject);
    send(res, versions.map((v) => v.version));
  });
  router.get('/subjects/:subject/versions/:version', (req, res) => {
    send(res, versionBody(existingVersion(req.params.subject, req.params.version, flag(req, 'deleted'))));
  });
  router.get('/subjects/:subject/versions/:version/schema', (req, res) => {
    const { schema } = existingVersion(req.params.subject, req.params.version, flag(req, 'deleted'));
    res.type(RESPONSE_CONTENT_TYPE).send(Buffer.from(schema));
  });

  router.post('/subjects/:subject/versions', async (req, res) => {
    const { schema, references } = schemaBody(req.body);
    send(res, { id: await store.register(req.params.subject, schema, references) });
  });

  // lookup: is this schema registered under the subject?
  router.post('/subjects/:subject', (req, res) => {
    const { subject } = req.params;
    const includeDeleted = flag(req, 'deleted');
    const { schema, references } = schemaBody(req.body);
    if (state.versions(subject, includeDeleted).length === 0) throw subjectNotFound(subject);
    const found = state.findInSubject(subject, state.prepare(schema, references).identity, includeDeleted);
    if (!found) throw schemaNotFound();
    send(res, versionBody(found));
  });

  router.delete('/subjects/:subject', async (req, res) => {
    send(res, await store.deleteSubject(req.params.subject, flag(req, 'permanent')));
  });
  router.delete('/subjects/:subject/versions/:version', async (req, res) => {
    const version = versionParam(req.params.version);
    send(res, await store.deleteVersion(req.params.subject, version, flag(req, 'permanent')));
  });

  router.get('/config', (_req, res) => {
    send(res, { compatibilityLevel: state.configuredLevel(null) ?? DEFAULT_COMPATIBILITY });
  });
  router.put('/config', async (req, res) => {
    const level = parseCompatibilityLevel((req.body as Record<string, unknown> | undefined)?.compatibility);
    if (!level) throw invalidCompatibilityLevel();
    await store.setCompatibility(null, level);
    send(res, { compatibility: level });
  });
  router.delete('/config', async (_req, res) => {
    const previous = state.configuredLevel(null) ? await store.deleteCompatibility(null) : DEFAULT_COMPATIBILITY;
    send(res, { compatibilityLevel: previous });
  });

  router.get('/config/:subject', (req, res) => {
    const { subject } = req.params;
    const own = state.configuredLevel(subject);
    if (own) return send(res, { compatibilityLevel: own });
    if (!flag(req, 'defaultToGlobal')) throw subjectConfigNotFound(subject);
    send(res, { compatibilityLevel: state.configuredLevel(null) ?? DEFAULT_COMPATIBILITY });
  });
  router.put('/config/:subject', async (req, res) => {
    const level = parseCompatibilityLevel((req.body as Record<string, unknown> | undefined)?.compatibility);
    if (!level) throw invalidCompatibilityLevel();
    await store.setCompatibility(req.params.subject, level);
    send(res, { compatibility: level });
  });
  router.delete('/config/:subject', async (req, res) => {
    send(res, { compatibilityLevel: await store.deleteCompatibility(req.params.subject) });
  });

  // Against one version (or "latest") the configured direction is checked against that version
  // alone; without a version, against every version the level covers.
  const testCompatibility = (req: Request, res: Response, subject: string, rawVersion?: string) => {
    const { schema, references } = schemaBody(req.body);
    const candidate = state.prepare(schema, references);
    let previous: SchemaVersion[];
    if (rawVersion === undefined) {
      previous = state.versions(subject, false);
    } else {
      // like Confluent, "latest" of a subject that has no versions yet accepts anything
      const latestOfNothing = versionParam(rawVersion) === 'latest' && state.versions(subject, false).length === 0;
      previous = latestOfNothing ? [] : [existingVersion(subject, rawVersion, false)];
    }
    const typed = previous.map((v) => ({ version: v.version, type: state.typeOf(v) }));
    const problems = compatibilityProblems(state.effectiveLevel(subject), candidate.type, typed);
    const body: Record<string, unknown> = { is_compatible: problems.length === 0 };
    if (flag(req, 'verbose')) body.messages = problems;
    send(res, body);
  };
  router.post('/compatibility/subjects/:subject/versions/:version', (req, res) =>
    testCompatibility(req, res, req.params.subject, req.params.version),
  );
  router.post('/compatibility/subjects/:subject/versions', (req, res) => testCompatibility(req, res, req.params.subject));

  return router;
}
