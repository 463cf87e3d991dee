import type { NextFunction, Request, RequestHandler, Response } from 'express';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import packageJson from '../../package.json';
import { AppError } from '../../core/errors';
import { problemBody } from '../problem';
import { errorMessage, type Logger } from '../../core/log';
import type { ApiKey } from '../../core/model';
import { authOf, isOperator } from '../auth';
import { TOOLS, ToolProblem, type ToolDeps, type ToolSpec } from './tools';

type Json = Record<string, unknown>;

/** A tool as tools/list shows it, with JSON Schemas drawn from the OpenAPI document's components. */
export interface ListedTool {
  spec: ToolSpec;
  inputSchema: Json;
  outputSchema: Json;
  validateInput: ValidateFunction;
}

/**
 * A schema of the OpenAPI components made self-contained: every component it refers to,
 * directly or not, goes into its `$defs`, and the references point there (a `$ref`, and the
 * targets of a discriminator's `mapping`).
 */
function selfContained(components: Record<string, Json>, root: Json): Json {
  const defs: Record<string, unknown> = {};
  const isComponent = (ref: unknown): ref is string => typeof ref === 'string' && ref.startsWith('#/components/schemas/');
  const pointTo = (ref: string): string => {
    const name = ref.slice('#/components/schemas/'.length);
    if (!(name in defs)) {
      defs[name] = {};
      defs[name] = rewrite(components[name]);
    }
    return `#/$defs/${name}`;
  };
  const rewrite = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(rewrite);
    if (typeof v !== 'object' || v === null) return v;
    const out: Json = {};
    for (const [k, child] of Object.entries(v as Json)) {
      if (k === '$ref' && isComponent(child)) out[k] = pointTo(child);
      else if (k === 'mapping' && typeof child === 'object' && child !== null) out[k] = Object.fromEntries(Object.entries(child).map(([tag, ref]) => [tag, isComponent(ref) ? pointTo(ref) : rewrite(ref)]));
      else out[k] = rewrite(child);
    }
    return out;
  };
  const body = rewrite(root) as Json;
  return Object.keys(defs).length > 0 ? { ...body, $defs: defs } : body;
}

/** The tools with their schemas, from the OpenAPI components (one description of every shape). */
export function toolCatalogue(components: Record<string, Json>): ListedTool[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  return TOOLS.map((spec) => {
    const body = spec.input.body ? (components[spec.input.body] as Json) : { properties: {}, required: [] };
    // a tool is a call, not a GET's answer sent back: members the service sets are no input
    const settable = Object.entries((body.properties as Json) ?? {}).filter(([, v]) => (v as Json)?.readOnly !== true);
    const input: Json = {
      type: 'object',
      properties: { ...Object.fromEntries(settable), ...(spec.input.properties ?? {}) },
      required: [...((body.required as string[]) ?? []), ...(spec.input.required ?? [])],
      ...(body.allOf ? { allOf: body.allOf } : {}),
    };
    const inputSchema = selfContained(components, input);
    const output = components[spec.output];
    if (!output) throw new Error(`tool ${spec.name}: no component ${spec.output}`);
    // MCP wants an object schema at the top; a oneOf of objects gets the type said outright
    const outputSchema = selfContained(components, { type: 'object', ...output });
    return { spec, inputSchema, outputSchema, validateInput: ajv.compile(inputSchema) };
  });
}

/** The problem document of an error, as a tool error result carries it. */
function problemOf(err: unknown, errorBase: string, requestId: string): { status: number; problem: Json } {
  if (err instanceof ToolProblem) return { status: err.status, problem: err.problem };
  if (err instanceof AppError) return { status: err.status, problem: problemBody(errorBase, err.slug, err.message, requestId, err.extra) };
  return { status: 500, problem: problemBody(errorBase, 'internal-error', 'an unexpected error occurred; quote the instance when reporting it', requestId) };
}

export interface McpOptions {
  deps: ToolDeps;
  tools: () => ListedTool[];
  disabledWriteGroups: ReadonlySet<string>;
  errorBase: () => string;
  log: Logger;
}

/** Tenant keys call the tenants' tools within their scopes; operator keys call the operators' tools, and the portal tools on a tenant's behalf. */
const mayCall = (key: ApiKey, tool: ToolSpec) => {
  const audience = tool.audience ?? 'tenant';
  if (isOperator(key)) return audience !== 'tenant';
  return audience !== 'operator' && (tool.scope === null || key.scopes.includes(tool.scope));
};

/** The MCP server of one request (stateless Streamable HTTP): the tools this key may call and that are enabled. */
function mcpServer(options: McpOptions, key: ApiKey, authorization: string, requestId: string): Server {
  const tools = options.tools().filter((t) => !options.disabledWriteGroups.has(t.spec.group) && mayCall(key, t.spec));
  const server = new Server({ name: packageJson.name, version: packageJson.version }, { capabilities: { tools: { listChanged: false } }, instructions: 'Read the health, readiness, proofs and delivery evidence of this webhook delivery service; every answer is measured when asked. Write tools need the write scope of their group.' });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({ name: t.spec.name, title: t.spec.title, description: t.spec.description, inputSchema: t.inputSchema as { type: 'object' }, outputSchema: t.outputSchema as { type: 'object' }, annotations: { title: t.spec.title, ...t.spec.annotations, openWorldHint: false } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = tools.find((t) => t.spec.name === request.params.name);
    if (!tool) {
      const problem = problemOf(new AppError('not-found', `no tool named ${request.params.name}`), options.errorBase(), requestId).problem;
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }] };
    }
    const args = (request.params.arguments ?? {}) as Json;
    if (!tool.validateInput(args)) {
      const errors = (tool.validateInput.errors ?? []).map((e) => ({ field: e.instancePath.replace(/^\//, '').replace(/\//g, '.') || (e.params as { missingProperty?: string }).missingProperty || 'arguments', message: e.message ?? 'is not valid' }));
      const problem = problemOf(new AppError('validation-error', `the arguments of ${tool.spec.name} are not valid`, { errors }), options.errorBase(), requestId).problem;
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }] };
    }
    try {
      const result = await tool.spec.run(options.deps, { key, authorization, args });
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
    } catch (err) {
      const { status, problem } = problemOf(err, options.errorBase(), requestId);
      if (status >= 500) options.log.error('MCP tool failed', { tool: tool.spec.name, request_id: requestId, error: errorMessage(err) });
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }] };
    }
  });
  return server;
}

/** JSON-RPC messages of a POST body (one message or a batch). */
function messagesOf(body: unknown): Json[] {
  if (Array.isArray(body)) return body.filter((m): m is Json => typeof m === 'object' && m !== null);
  return typeof body === 'object' && body !== null ? [body as Json] : [];
}

/** The request as the web-standard transport reads it (the body is already parsed). */
function webRequestOf(req: Request): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new globalThis.Request(`http://localhost${req.originalUrl}`, { method: req.method, headers });
}

/** A refusal of the MCP transport (a JSON-RPC error with an HTTP error status) as the AppError it stands for. */
async function transportError(answer: globalThis.Response): Promise<AppError> {
  let message = `the MCP transport refused the request (${answer.status})`;
  try {
    const body = (await answer.json()) as { error?: { message?: unknown } };
    if (typeof body.error?.message === 'string') message = body.error.message;
  } catch {
    /* no JSON-RPC error body: the status says it */
  }
  switch (answer.status) {
    case 406:
      return new AppError('not-acceptable', `${message}; send Accept: application/json, text/event-stream`);
    case 413:
      return new AppError('payload-too-large', message);
    case 415:
      return new AppError('unsupported-media-type', message);
    case 404:
      return new AppError('not-found', message);
    case 400: {
      const field = /protocol version/i.test(message) ? 'MCP-Protocol-Version' : /session/i.test(message) ? 'Mcp-Session-Id' : 'body';
      return new AppError('validation-error', message, { errors: [{ field, message }] });
    }
    default:
      return new AppError(answer.status < 500 ? 'validation-error' : 'internal-error', message, answer.status < 500 ? { errors: [{ field: 'request', message }] } : {});
  }
}

/**
 * POST /v1/mcp: the Streamable HTTP transport, stateless (a server per request, JSON answers).
 * A call of a tool whose write group is disabled, or whose scope the key lacks, is refused with
 * a 403 problem before the transport sees it, as the REST route would be.
 */
export function mcpHandler(options: McpOptions): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const key = authOf(res);
    for (const message of messagesOf(req.body)) {
      if (message.method !== 'tools/call') continue;
      const name = (message.params as Json | undefined)?.name;
      const tool = options.tools().find((t) => t.spec.name === name);
      if (!tool) continue;
      if (options.disabledWriteGroups.has(tool.spec.group)) {
        return next(new AppError('write-tool-disabled', `the tool ${tool.spec.name} is in the write group ${tool.spec.group}, which is disabled on this deployment`, { tool_group: tool.spec.group }));
      }
      if (!mayCall(key, tool.spec)) {
        if (tool.spec.scope === null || isOperator(key)) return next(new AppError('permission-denied', `the tool ${tool.spec.name} is for ${isOperator(key) ? 'tenant' : 'operator'} keys`, { resource_id: tool.spec.name }));
        return next(new AppError('insufficient-scope', `the tool ${tool.spec.name} needs the scope ${tool.spec.scope}`, { required_scope: tool.spec.scope }));
      }
    }
    const requestId = String(res.getHeader('x-request-id') ?? '');
    const server = mcpServer(options, key, String(req.headers.authorization), requestId);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      const answer = await transport.handleRequest(webRequestOf(req), { parsedBody: req.body });
      // the transport answers its refusals as JSON-RPC errors; this API answers them as problems
      if (answer.status >= 400) return next(await transportError(answer));
      res.status(answer.status);
      answer.headers.forEach((value, name) => {
        if (name !== 'content-length') res.setHeader(name, value);
      });
      res.end(Buffer.from(await answer.arrayBuffer()));
    } catch (err) {
      if (!res.headersSent) return next(err);
      options.log.error('MCP request failed after answering began', { request_id: requestId, error: errorMessage(err), stack: (err as Error).stack });
    }
  };
}
