/**
 * `GET /v1/openapi.json`: an OpenAPI 3.1 document generated from what is really served — every
 * registered tool's `http` binding (its zod input schema as query parameters or a JSON body, with
 * the binding's path parameters), the hand-written routes (healthz, SSE), and whatever extension
 * routes describe themselves through `OpenApiRoutes.add`. The `.describe()` text of each input
 * field becomes the parameter description.
 * @module
 */
import { z } from 'zod';
import type { App } from '../../app';
import type { AnyTool, HttpBinding } from '../../tools/core/define-tool';
import { VERSION } from '../../version';
import { bindingsOf } from './mount-tools';

type Json = Record<string, unknown>;
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Routes mounted by hand (SSE, session API, compat) describe themselves here. */
export interface OpenApiRoutes {
  /**
   * `path` in Hono form (`/v1/sessions/:id/events`) or OpenAPI form (`/v1/sessions/{id}/events`).
   * `servedWhen`: for a route that answers 404 unless config turns it on (read per document, so
   * the document lists only what is served now).
   */
  add(method: HttpMethod, path: string, operation: Json, servedWhen?: (app: App) => boolean): void;
  list(): { method: HttpMethod; path: string; operation: Json; servedWhen?: (app: App) => boolean }[];
}

export function createOpenApiRoutes(): OpenApiRoutes {
  const routes: ReturnType<OpenApiRoutes['list']> = [];
  return {
    add(method, path, operation, servedWhen) {
      routes.push({ method, path: openApiPath(path), operation, servedWhen });
    },
    list: () => [...routes],
  };
}

const ERROR_RESPONSES: Json = {
  BadRequest: errorResponse(
    'Invalid input: the message names the field (for example `invalid recent_runs_limit`).',
  ),
  Unauthorized: errorResponse(
    'Bearer token missing or wrong, or no token configured while unauthenticated access is off (`authentication required`).',
  ),
  NotFound: errorResponse('Unknown route or resource.'),
  PayloadTooLarge: errorResponse('The request body is over the limit (`services.http.max_body_bytes`).'),
  NotReady: errorResponse('`App not ready`: the server is starting (database, registry) or shutting down.'),
};

export function buildOpenApiDocument(
  app: App,
  options: { mounted: readonly AnyTool[]; routes: OpenApiRoutes; serverUrl?: string },
): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const schemas: Json = {
    Error: {
      type: 'object',
      description: 'Canonical error body.',
      properties: {
        error: {
          type: 'object',
          properties: { message: { type: 'string' }, type: { type: 'string' } },
          required: ['message', 'type'],
        },
      },
      required: ['error'],
    },
    FlatError: {
      type: 'object',
      description: 'Compat-surface error body (spec, Errors → Compat surface).',
      properties: { error: { type: 'string' }, code: { type: 'integer' } },
      required: ['error', 'code'],
    },
  };
  const put = (method: string, path: string, operation: Json) => {
    paths[path] ??= {};
    paths[path][method.toLowerCase()] = operation;
  };

  const mountedNames = new Set(options.mounted.map((t) => t.name));
  const tools = app.tools
    .registered()
    .filter((t) => mountedNames.has(t.name))
    .sort((a, b) => a.name.localeCompare(b.name));
  for (const tool of tools) {
    const bindings = bindingsOf(tool);
    for (const binding of bindings) {
      const operationId = bindings.length > 1 ? `${tool.name}_${binding.method.toLowerCase()}` : tool.name;
      put(binding.method, openApiPath(binding.path), toolOperation(tool, binding, operationId, schemas));
    }
  }
  for (const route of options.routes.list()) {
    if (route.servedWhen && !route.servedWhen(app)) continue;
    put(route.method, route.path, route.operation);
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'svc',
      version: VERSION,
      description:
        'svc HTTP service. Every route except GET /healthz takes `Authorization: Bearer <token>`. ' +
        'Tool routes are the HTTP twins of native tools: the same input schema and the same JSON result.',
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    security: [{ bearerAuth: [] }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
      schemas,
      responses: ERROR_RESPONSES,
    },
  };
}

/** `/v1/sessions/:id/events` → `/v1/sessions/{id}/events` (Hono regex constraints dropped). */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, '{$1}');
}

function toolOperation(tool: AnyTool, binding: HttpBinding, operationId: string, schemas: Json): Json {
  const schema = inputSchema(tool, schemas);
  const properties = { ...((schema.properties as Record<string, Json> | undefined) ?? {}) };
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const parameters: Json[] = [];
  for (const [param, field] of Object.entries(binding.params ?? {})) {
    const property = properties[field] ?? { type: 'string' };
    parameters.push(parameter(param, 'path', true, property));
    delete properties[field];
  }
  for (const key of Object.keys(binding.fixed ?? {})) delete properties[key];

  const operation: Json = {
    operationId,
    summary: firstSentence(tool.description),
    description: tool.description,
    tags: [tool.family],
    'x-svc-tool': tool.name,
    ...(tool.surfaces?.mcp ? { 'x-svc-mcp-tool': tool.surfaces.mcp } : {}),
  };
  const hasObjectShape = schema.properties !== undefined;
  if (binding.method === 'GET' || binding.method === 'DELETE') {
    for (const [name, property] of Object.entries(properties)) {
      parameters.push(parameter(name, 'query', required.has(name), property));
    }
  } else if (Object.keys(properties).length > 0 || !hasObjectShape) {
    const body: Json = hasObjectShape
      ? {
          type: 'object',
          properties,
          required: [...required].filter((k) => k in properties),
          additionalProperties: false,
        }
      : schema;
    if (Array.isArray(body.required) && body.required.length === 0) delete body.required;
    operation.requestBody = {
      required: Array.isArray(body.required) && body.required.length > 0,
      content: { 'application/json': { schema: body } },
    };
  }
  if (parameters.length) operation.parameters = parameters;
  const status = String(binding.status ?? 200);
  const errorRef = (name: string) =>
    binding.errors === 'text'
      ? { description: String((ERROR_RESPONSES[name] as Json).description), content: textContent() }
      : binding.errors === 'flat'
        ? {
            description: String((ERROR_RESPONSES[name] as Json).description),
            content: { 'application/json': { schema: { $ref: '#/components/schemas/FlatError' } } },
          }
        : { $ref: `#/components/responses/${name}` };
  operation.responses = {
    [status]: {
      description: `The \`${tool.name}\` result (the same JSON as the native tool, MCP and CLI --json).`,
      content: { 'application/json': { schema: { type: 'object' } } },
    },
    '400': errorRef('BadRequest'),
    '401': errorRef('Unauthorized'),
    '404': errorRef('NotFound'),
    ...(binding.method === 'GET' || binding.method === 'DELETE'
      ? {}
      : { '413': errorRef('PayloadTooLarge') }),
    '503': errorRef('NotReady'),
  };
  return operation;
}

function inputSchema(tool: AnyTool, schemas: Json): Json {
  let schema: Json;
  try {
    schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Json;
  } catch {
    return { type: 'object' };
  }
  delete schema.$schema;
  const defs = schema.$defs as Json | undefined;
  if (!defs) return schema;
  // Shared or recursive sub-schemas: hoist them into components and point the refs there.
  delete schema.$defs;
  const prefix = `${tool.name}.`;
  for (const [name, def] of Object.entries(defs)) schemas[`${prefix}${name}`] = def;
  return JSON.parse(
    JSON.stringify(schema).replace(
      /"#\/\$defs\/([^"]+)"/g,
      (_m, name: string) => `"#/components/schemas/${prefix}${name}"`,
    ),
  ) as Json;
}

function parameter(name: string, where: 'path' | 'query', required: boolean, property: Json): Json {
  const { description, ...schema } = property;
  const out: Json = { name, in: where, required, schema };
  if (typeof description === 'string') out.description = description;
  if (where === 'query' && schema.type === 'array') {
    out.style = 'form';
    out.explode = true;
  }
  return out;
}

function errorResponse(description: string): Json {
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

function textContent(): Json {
  return { 'text/plain': { schema: { type: 'string' } } };
}

function firstSentence(text: string): string {
  return text.split(/(?<=\.)\s/)[0];
}
