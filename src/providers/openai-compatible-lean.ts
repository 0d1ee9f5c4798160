/**
 * Less work per request for the SDK's OpenAI-compatible chat model, same requests and same parts.
 *
 * Its request URL and headers are computed once per model (the SDK builds the URL with `new URL`
 * and the headers through a `Headers` object on every call, from values fixed when the model is
 * created).
 *
 * Lighter validation of the chunks of its stream: the SDK's OpenAI-compatible
 * chat model checks every streamed chunk against its zod schema (asynchronously, a new schema
 * wrapper each time): with a chunk per token that is most of the provider's CPU per step. The
 * chunks have a fixed, small shape, so a chunk that plainly has it (checked by hand, field by
 * field, against the same rules as the zod schema) is taken as it is; anything else (an error
 * chunk, an unexpected type, a refusal that is not a string) goes to the SDK's own schema, so the
 * outcome is the same as before: the same parts, the same errors.
 *
 * The schema and the config are the model's `chunkSchema` and `config` fields (private in the SDK's
 * types): each is replaced only when it is there with the expected shape; otherwise the model is
 * left as it was (a test checks both replacements happen with the SDK version svc ships).
 *
 * Its streamed answer read without web streams (`leanStreaming`): its `doStream` sends the same
 * request, built by ./openai-compatible-request.ts for the calls it covers (through the model's own
 * `getArgs`, `transformRequestBody` and the SDK's `postJsonToApi` for the others, and for every
 * answer but a 2xx with a body), and reads the response body with ./openai-compatible-stream.ts
 * into the same parts; the result offers them as an iterator (./stream-parts.ts), its `stream`
 * made on first read.
 * With the process's own fetch, that request goes through ./http-transport.ts (`attachLeanTransport`):
 * node:http instead of undici, its body read from the socket's chunks.
 * @module
 */
import {
  EmptyResponseBodyError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3StreamResult,
  type LanguageModelV3Usage,
} from '@ai-sdk/provider';
import { combineHeaders, extractResponseHeaders, postJsonToApi } from '@ai-sdk/provider-utils';
import type { LeanTransport } from './http-transport';
import { type ChatRequest, chatRequestBuilder } from './openai-compatible-request';
import { chatStreamParts, PLAIN_CHUNK } from './openai-compatible-stream';
import { resultWithParts } from './stream-parts';

interface ZodLike {
  safeParseAsync(
    value: unknown,
  ): Promise<{ success: true; data: unknown } | { success: false; error: unknown }>;
}

const LEAN = Symbol('svc.leanChunks');

/**
 * The AI SDK's mark of a schema object (provider-utils' `jsonSchema()`; a `Symbol.for`, so every
 * copy of the SDK shares it). Built here rather than through `ai`'s `jsonSchema`, so building a
 * model does not load `ai` (the TUI and `svc doctor` resolve models without it).
 */
const SCHEMA_MARK = Symbol.for('vercel.ai.schema');

/** The model with its chunk schema taking plain chunks without zod; true when it was replaced. */
export function leanChunkValidation(model: LanguageModelV3): boolean {
  const original: unknown = Reflect.get(model, 'chunkSchema');
  if (typeof original === 'object' && original !== null && Reflect.get(original, LEAN) === true) return true;
  if (!isZod(original)) return false;
  const schema = {
    [SCHEMA_MARK]: true,
    [LEAN]: true,
    // The lean stream reader takes such a chunk without the SDK's async parse (./openai-compatible-stream.ts).
    [PLAIN_CHUNK]: isPlainChunk,
    _type: undefined,
    jsonSchema: {},
    validate: (value: unknown) =>
      isPlainChunk(value) ? { success: true as const, value } : viaZod(original, value),
  };
  return Reflect.set(model, 'chunkSchema', schema);
}

/** The model with its request URL and headers computed once; true when its config was replaced. */
export function onceComputedRequest(model: LanguageModelV3): boolean {
  const config: unknown = Reflect.get(model, 'config');
  if (!isObject(config) || Reflect.get(config, LEAN) === true) return isObject(config);
  const { url, headers } = config;
  if (typeof url !== 'function' || typeof headers !== 'function') return false;
  const urls = new Map<string, unknown>();
  let fixedHeaders: Obj | undefined;
  const lean: Obj = {
    ...config,
    [LEAN]: true,
    url: (options: { path: string; modelId: string }) => {
      const key = `${options.path}\u0000${options.modelId}`;
      if (!urls.has(key)) urls.set(key, url.call(config, options));
      return urls.get(key);
    },
    // A fresh copy each time: the SDK merges it into the call's headers.
    headers: () => {
      if (!fixedHeaders) {
        const value: unknown = headers.call(config);
        if (!isObject(value) || typeof value.then === 'function') return value;
        fixedHeaders = value;
      }
      return { ...fixedHeaders };
    },
  };
  return Reflect.set(model, 'config', lean);
}

/** What the lean `doStream` uses of the SDK's chat model (private in its types). */
interface ChatModelInternals {
  modelId: string;
  providerOptionsName: string;
  config: Obj & {
    url(options: { path: string; modelId: string }): string;
    headers(): Record<string, string | undefined>;
    fetch?: typeof fetch;
    includeUsage?: boolean;
  };
  chunkSchema: unknown;
  failedResponseHandler: unknown;
  getArgs(
    options: LanguageModelV3CallOptions,
  ): Promise<{ args: Obj; warnings: unknown[]; metadataKey: string }>;
  transformRequestBody(args: Obj, warnings: unknown[]): Obj;
  convertUsage(usage: unknown): LanguageModelV3Usage;
}

const STREAMING = Symbol('svc.leanStreaming');
const TRANSPORT = Symbol('svc.leanTransport');

/**
 * The model's lean `doStream` sending its request with `transport` (./http-transport.ts) instead
 * of its config's fetch; true when the model has the lean `doStream` (leanStreaming).
 */
export function attachLeanTransport(model: LanguageModelV3, transport: LeanTransport): boolean {
  if (Reflect.get(model, STREAMING) !== true) return false;
  return Reflect.set(model, TRANSPORT, transport);
}

/**
 * The model's `doStream` reading its answer without web streams (see the module comment); true when
 * it applies: the SDK's chat model with the members it uses, and no metadata extractor (whose
 * per-chunk hook only the SDK's path calls). A call asking for raw chunks takes the SDK's path.
 */
export function leanStreaming(model: LanguageModelV3): boolean {
  if (Reflect.get(model, STREAMING) === true) return true;
  const m = model as unknown as ChatModelInternals;
  const config: unknown = Reflect.get(model, 'config');
  if (!isObject(config) || config.metadataExtractor != null) return false;
  for (const name of ['getArgs', 'transformRequestBody', 'convertUsage'] as const)
    if (typeof m[name] !== 'function') return false;
  if (typeof config.url !== 'function' || typeof config.headers !== 'function') return false;
  if (m.failedResponseHandler == null || m.chunkSchema == null || typeof m.providerOptionsName !== 'string')
    return false;
  const sdkStream = model.doStream.bind(model);
  const direct = chatRequestBuilder(m, Reflect.get(config, LEAN) === true);
  Reflect.set(model, STREAMING, true);
  return Reflect.set(model, 'doStream', (options: LanguageModelV3CallOptions) =>
    options.includeRawChunks ? sdkStream(options) : leanDoStream(m, options, direct),
  );
}

/** The SDK's `doStream` request (`direct`: built by svc), its answer read by ./openai-compatible-stream.ts. */
async function leanDoStream(
  model: ChatModelInternals,
  options: LanguageModelV3CallOptions,
  directRequest: (options: LanguageModelV3CallOptions) => ChatRequest | undefined,
): Promise<LanguageModelV3StreamResult> {
  const { config } = model;
  const direct = directRequest(options);
  let body: Obj;
  let warnings: unknown[] = [];
  let metadataKey: string;
  if (direct) ({ body, metadataKey } = direct);
  else {
    const built = await model.getArgs({ ...options });
    ({ warnings, metadataKey } = built);
    body = model.transformRequestBody(
      {
        ...built.args,
        stream: true,
        stream_options: config.includeUsage ? { include_usage: true } : undefined,
      },
      warnings,
    );
  }
  const fetchFn = (Reflect.get(model, TRANSPORT) as typeof fetch | undefined) ?? config.fetch;
  const post = (fetchWith: typeof fetchFn) =>
    postJsonToApi({
      url: direct?.url ?? config.url({ path: '/chat/completions', modelId: model.modelId }),
      headers: combineHeaders(config.headers(), options.headers),
      body,
      failedResponseHandler: model.failedResponseHandler as never,
      successfulResponseHandler: async ({ response, url, requestBodyValues }) => {
        const headers = extractResponseHeaders(response);
        if (response.body == null) throw new EmptyResponseBodyError({});
        return {
          responseHeaders: headers,
          value: { body: response.body, url, requestBodyValues, statusCode: response.status, headers },
        };
      },
      abortSignal: options.abortSignal,
      fetch: fetchWith,
    });
  const { responseHeaders, value } = direct
    ? await sendDirect(direct, options, fetchFn, post)
    : await post(fetchFn);
  const parts = chatStreamParts({
    body: value.body,
    schema: model.chunkSchema,
    warnings,
    providerOptionsName: metadataKey,
    convertUsage: (usage) => model.convertUsage(usage),
    url: value.url,
    requestBodyValues: value.requestBodyValues,
    statusCode: value.statusCode,
    responseHeaders: value.headers,
  });
  return resultWithParts(parts, { request: { body }, response: { headers: responseHeaders } });
}

/**
 * The request svc built, sent with the model's fetch as `postToApi` sends it. Only a 2xx answer
 * with a body is taken here; a failed fetch or any other answer goes through the SDK's own
 * `postJsonToApi` with a fetch that gives that same outcome, so the errors are the SDK's.
 */
async function sendDirect<T>(
  request: ChatRequest,
  options: LanguageModelV3CallOptions,
  fetchFn: typeof fetch | undefined,
  post: (fetchWith: typeof fetch) => Promise<T>,
): Promise<T | { responseHeaders: Record<string, string>; value: SentValue }> {
  let response: Response;
  try {
    response = await (fetchFn ?? globalThis.fetch)(request.url, {
      method: 'POST',
      headers: request.headers,
      body: JSON.stringify(request.body),
      signal: options.abortSignal,
    });
  } catch (error) {
    return post(() => Promise.reject(error));
  }
  if (!response.ok || response.body == null) return post(() => Promise.resolve(response));
  const headers = extractResponseHeaders(response);
  return {
    responseHeaders: headers,
    value: {
      body: response.body,
      url: request.url,
      requestBodyValues: request.body,
      statusCode: response.status,
      headers,
    },
  };
}

interface SentValue {
  body: ReadableStream<Uint8Array>;
  url: string;
  requestBodyValues: unknown;
  statusCode: number;
  headers: Record<string, string>;
}

async function viaZod(schema: ZodLike, value: unknown) {
  const result = await schema.safeParseAsync(value);
  return result.success
    ? { success: true as const, value: result.data }
    : {
        success: false as const,
        error: result.error instanceof Error ? result.error : new Error(String(result.error)),
      };
}

function isZod(value: unknown): value is ZodLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    '_zod' in value &&
    typeof (value as { safeParseAsync?: unknown }).safeParseAsync === 'function'
  );
}

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const nullish = (v: unknown) => v === null || v === undefined;
const stringOrNullish = (v: unknown) => nullish(v) || typeof v === 'string';
const numberOrNullish = (v: unknown) => nullish(v) || typeof v === 'number';

/**
 * A chunk the SDK's chunk schema accepts and passes on unchanged (for every field the model reads):
 * the base chunk of @ai-sdk/openai-compatible's `chunkBaseSchema`, without an `error` field and
 * with a refusal that is a string or absent (the schema turns any other refusal into undefined).
 */
export function isPlainChunk(value: unknown): boolean {
  if (!isObject(value) || 'error' in value) return false;
  if (!stringOrNullish(value.id) || !numberOrNullish(value.created) || !stringOrNullish(value.model))
    return false;
  if (!isUsage(value.usage)) return false;
  const choices = value.choices;
  if (!Array.isArray(choices)) return false;
  for (const choice of choices) {
    if (!isObject(choice) || !stringOrNullish(choice.finish_reason)) return false;
    if (!nullish(choice.delta) && !isDelta(choice.delta)) return false;
  }
  return true;
}

function isDelta(delta: unknown): boolean {
  if (!isObject(delta)) return false;
  if (!nullish(delta.role) && delta.role !== 'assistant' && delta.role !== '') return false;
  if (!isContent(delta.content)) return false;
  if (!stringOrNullish(delta.refusal)) return false;
  if (!stringOrNullish(delta.reasoning_content) || !stringOrNullish(delta.reasoning)) return false;
  const calls = delta.tool_calls;
  if (nullish(calls)) return true;
  if (!Array.isArray(calls)) return false;
  for (const call of calls) {
    if (!isObject(call) || !numberOrNullish(call.index) || !stringOrNullish(call.id)) return false;
    const fn = call.function;
    if (!isObject(fn) || !stringOrNullish(fn.name) || !stringOrNullish(fn.arguments)) return false;
    const extra = call.extra_content;
    if (nullish(extra)) continue;
    if (!isObject(extra)) return false;
    if (nullish(extra.google)) continue;
    if (!isObject(extra.google) || !stringOrNullish(extra.google.thought_signature)) return false;
  }
  return true;
}

function isContent(content: unknown): boolean {
  if (nullish(content) || typeof content === 'string') return true;
  if (!Array.isArray(content)) return false;
  return content.every((part) => isObject(part) && typeof part.type === 'string');
}

function isUsage(usage: unknown): boolean {
  if (nullish(usage)) return true;
  if (!isObject(usage)) return false;
  if (
    !numberOrNullish(usage.prompt_tokens) ||
    !numberOrNullish(usage.completion_tokens) ||
    !numberOrNullish(usage.total_tokens)
  )
    return false;
  const prompt = usage.prompt_tokens_details;
  if (!nullish(prompt) && !(isObject(prompt) && numberOrNullish(prompt.cached_tokens))) return false;
  const completion = usage.completion_tokens_details;
  if (nullish(completion)) return true;
  return (
    isObject(completion) &&
    numberOrNullish(completion.reasoning_tokens) &&
    numberOrNullish(completion.accepted_prediction_tokens) &&
    numberOrNullish(completion.rejected_prediction_tokens)
  );
}
