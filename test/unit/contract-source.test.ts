import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { openApiDocument, requestBodyComponents } from '../../api/openapi';
import { BODY_OPERATIONS, validateBody } from '../../api/validation';
import { toolCatalogue } from '../../api/mcp/server';
import { KEY_CREATE_FLAGS } from '../../cli/keys';
import type { AppError } from '../../core/errors';

type Json = Record<string, unknown>;

/**
 * The OpenAPI components are the one description of request bodies: the routes validate with
 * them, the MCP tools take their inputs from them and the CLI's flags name their members, so a
 * change to a body is made once and this suite fails on any copy that drifted.
 */
describe('one contract source for request bodies', () => {
  const doc = openApiDocument({ errorBase: 'https://errors.example' });
  const components = (doc.components as { schemas: Record<string, Json> }).schemas;
  const repo = path.join(__dirname, '../..');
  const operations = Object.values(doc.paths as Record<string, Record<string, Json>>).flatMap((item) => Object.values(item).filter((op) => typeof op?.operationId === 'string'));
  const jsonBodies = operations.filter((op) => ((op.requestBody as Json | undefined)?.content as Json | undefined)?.['application/json']);

  it('gives every JSON request body as a component schema', () => {
    for (const op of jsonBodies) {
      const schema = (((op.requestBody as Json).content as Json)['application/json'] as Json).schema as Json;
      expect({ operation: op.operationId, ref: schema.$ref }).toEqual({ operation: op.operationId, ref: expect.stringMatching(/^#\/components\/schemas\//) });
      expect(components[String(schema.$ref).split('/').pop()!]).toBeDefined();
    }
  });

  it('validates the body of each such operation of the API with its component (the MCP endpoint\'s is read by the MCP server)', () => {
    const byOperation = requestBodyComponents(doc);
    expect(Object.keys(byOperation).filter((op) => op !== 'mcp').sort()).toEqual([...BODY_OPERATIONS].sort());
    const routes = readdirSync(path.join(repo, 'api/routes')).map((f) => readFileSync(path.join(repo, 'api/routes', f), 'utf8')).join('\n');
    for (const op of BODY_OPERATIONS) expect({ op, validatedByARoute: routes.includes(`'${op}'`) }).toEqual({ op, validatedByARoute: true });
  });

  it('closes every object of a request body, nested ones included, except the provider config that keeps unknown settings', () => {
    const open: string[] = [];
    const seen = new Set<Json>();
    const visit = (s: unknown, where: string): void => {
      if (typeof s !== 'object' || s === null || seen.has(s as Json)) return;
      const schema = s as Json;
      seen.add(schema);
      if (typeof schema.$ref === 'string') return visit(components[schema.$ref.split('/').pop()!], schema.$ref.split('/').pop()!);
      if (schema.properties && schema.additionalProperties !== false && where !== 'ProviderConfig') open.push(where);
      for (const [k, v] of Object.entries(schema)) {
        // conditions (if/then/else) add rules to an object described elsewhere
        if (['if', 'then', 'else', 'not'].includes(k)) continue;
        if (Array.isArray(v)) v.forEach((item, i) => visit(item, `${where}.${k}[${i}]`));
        else visit(v, `${where}.${k}`);
      }
    };
    for (const c of Object.values(requestBodyComponents(doc)).filter((c) => c !== 'JsonRpcMessages')) visit(components[c], c);
    expect(open).toEqual([]);
  });

  it('builds the input of every create and update MCP tool from the component of its body', () => {
    const bodies = new Set(Object.values(requestBodyComponents(doc)));
    const writes = toolCatalogue(components).filter((t) => t.spec.input.body);
    expect(writes.map((t) => t.spec.name).sort()).toEqual(expect.arrayContaining(['create_api_key', 'create_delivery_flow', 'create_destination', 'create_ingester', 'create_saved_payload', 'update_ingester']));
    for (const { spec, inputSchema } of writes) {
      const body = components[spec.input.body!]!;
      expect({ tool: spec.name, isARequestBody: bodies.has(spec.input.body!) }).toEqual({ tool: spec.name, isARequestBody: true });
      const properties = inputSchema.properties as Json;
      for (const [member, schema] of Object.entries(body.properties as Json)) {
        // members a GET shows and the service sets are no input of a call
        if ((schema as Json).readOnly) continue;
        const asTool = JSON.stringify(properties[member]).replaceAll('#/$defs/', '#/components/schemas/');
        expect({ tool: spec.name, member, schema: asTool }).toEqual({ tool: spec.name, member, schema: JSON.stringify(schema) });
      }
      expect(inputSchema.required).toEqual(expect.arrayContaining(body.required as string[]));
      const extra = Object.keys(properties).filter((k) => !(k in (body.properties as Json)));
      expect(extra.sort()).toEqual(Object.keys(spec.input.properties ?? {}).sort());
    }
  });

  it('has the CLI set only members of the body the API takes, under flags it parses', () => {
    const members = Object.keys(components.ApiKeyCreate!.properties as Json);
    const main = readFileSync(path.join(repo, 'cli/main.ts'), 'utf8');
    for (const [flag, member] of Object.entries(KEY_CREATE_FLAGS)) {
      expect(members).toContain(member);
      expect(main).toMatch(new RegExp(`\\s'?${flag}'?: \\{ type: 'string' \\}`));
    }
  });

  describe('problems of a body, as fields', () => {
    const problems = (operation: (typeof BODY_OPERATIONS)[number], body: unknown) => {
      try {
        validateBody(operation, body).done();
        return [];
      } catch (err) {
        return ((err as AppError).extra as { errors: unknown[] }).errors;
      }
    };

    it('names an unknown member by its path, nested ones too', () => {
      expect(problems('updateIngester', { name: 'x', delivery_flows: [{ destination_ids: [] }, { destination_ids: [], colour: 'blue' }] })).toEqual([{ field: 'delivery_flows[1].colour', message: 'is not a member of this body' }]);
      expect(problems('createDestination', { name: 'x', url: 'https://example.com', auth: { type: 'bearer', token: 'a-long-token', password: 'x' } })).toEqual([{ field: 'auth.password', message: 'is not a member of this body' }]);
    });

    it('reports a type mismatch, a missing member and a bad length together, one per field', () => {
      expect(problems('createDeliveryFlow', { name: 'y'.repeat(201), ingester_id: 7 })).toEqual([
        { field: 'destination_ids', message: 'is required' },
        { field: 'name', message: 'must be at most 200 characters' },
        { field: 'ingester_id', message: 'must be a string' },
      ]);
      expect(problems('createApiKey', { name: 'k', scopes: 'read:keys', resource_ids: [1] })).toEqual([
        { field: 'scopes', message: 'must be an array' },
        { field: 'resource_ids[0]', message: 'must be a string' },
      ]);
    });

    it('accepts back what a GET shows, and refuses a body that is no object', () => {
      expect(problems('createSavedPayload', { id: 'pld_x', created_at: 'then', name: 'p', payload: {} })).toEqual([]);
      expect(problems('createSavedPayload', ['p'])).toEqual([{ field: 'body', message: 'must be a JSON object' }]);
    });

    it('leaves a member that matches none of its forms to the check that reads it, and refuses it whole when none does', () => {
      const check = validateBody('createIngester', { name: 'i', provider: 'none', filters: [{ type: 'header' }] });
      expect(check.usable('filters')).toBe(true);
      expect(() => check.done()).toThrow(/filters\[0\]: matches none of the forms/);
      check.fail('filters[0].name', 'is required');
      expect(() => check.done()).toThrow(/^filters\[0\]\.name: is required$/);
    });
  });
});
