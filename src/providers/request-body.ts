/**
 * Provider request bodies without re-serializing the tool list on every step. The AI SDK builds
 * each request afresh: every active tool's description and JSON Schema (~120 KB for svc's full
 * tool set) is stringified, then encoded, on every step of every run, although the tool set
 * changes rarely. For providers that copy a tool's description and schema into the body
 * unchanged, the model handed to the SDK (`withSerializedTools`) replaces them with small
 * markers, and the provider's fetch (`sendOnce`, in ./timeout.ts) splices the bytes of each
 * description and schema back in, encoded once per process. The bytes sent are the same as
 * without it.
 * @module
 */
import { randomBytes } from 'node:crypto';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
} from '@ai-sdk/provider';
import { wrapModel } from './wrap-model';

/** `{"$svcSchema":N}`: an object no schema of a tool contains (a schema's keys are JSON Schema's). */
const SCHEMA_KEY = '$svcSchema';
/** A description marker: NUL, a per-process nonce and the id (a string no description equals). */
const NONCE = randomBytes(6).toString('hex');
const DESCRIPTION_PREFIX = `\u0000svc:${NONCE}:`;
/** The description prefix as it appears in a JSON body (NUL escaped). */
const DESCRIPTION_PREFIX_JSON = `"\\u0000svc:${NONCE}:`;
const MARKER = new RegExp(`\\{"\\$svcSchema":(\\d+)\\}|"\\\\u0000svc:${NONCE}:(\\d+)"`, 'g');
/** At most this many descriptions and schemas are kept; later ones are sent as they are. */
const MAX_ENTRIES = 20_000;

const bytes: Buffer<ArrayBuffer>[] = [];
const schemaIds = new WeakMap<object, number>();
const descriptionIds = new Map<string, number>();

function idOf<K>(
  key: K,
  ids: { get(k: K): number | undefined; set(k: K, v: number): unknown },
  json: () => string,
) {
  let id = ids.get(key);
  if (id === undefined) {
    if (bytes.length >= MAX_ENTRIES) return undefined;
    id = bytes.length;
    bytes.push(Buffer.from(json(), 'utf8'));
    ids.set(key, id);
  }
  return id;
}

/**
 * Marked lists by the list they mark: the step driver hands the same list for the same tools
 * (../agent/step-request.ts), so a run's steps and the compat requests mark it once. A list is
 * not changed once handed to a model.
 */
const markedLists = new WeakMap<object, NonNullable<LanguageModelV3CallOptions['tools']>>();

/** The call's function tools with markers for their descriptions and schemas. */
function markTools(params: LanguageModelV3CallOptions): LanguageModelV3CallOptions {
  if (!params.tools?.length) return params;
  let tools = markedLists.get(params.tools);
  if (!tools) {
    tools = markedList(params.tools);
    markedLists.set(params.tools, tools);
  }
  return { ...params, tools };
}

function markedList(
  list: NonNullable<LanguageModelV3CallOptions['tools']>,
): NonNullable<LanguageModelV3CallOptions['tools']> {
  return list.map((tool) => {
    if (tool.type !== 'function') return tool;
    const marked: LanguageModelV3FunctionTool = { ...tool };
    const schema = tool.inputSchema;
    if (schema && typeof schema === 'object') {
      const id = idOf(schema, schemaIds, () => JSON.stringify(schema));
      if (id !== undefined)
        marked.inputSchema = { [SCHEMA_KEY]: id } as LanguageModelV3FunctionTool['inputSchema'];
    }
    const description = tool.description;
    if (description && description.length > 64) {
      const id = idOf(description, descriptionIds, () => JSON.stringify(description));
      if (id !== undefined) marked.description = `${DESCRIPTION_PREFIX}${id}`;
    }
    return marked;
  });
}

/**
 * The model with its tools' descriptions and schemas sent as bytes encoded once (see the module
 * comment). Only for provider types whose request carries a function tool's `description` and
 * `inputSchema` verbatim, and whose fetch is ./timeout.ts's (which splices them back).
 */
export function withSerializedTools(model: LanguageModelV3): LanguageModelV3 {
  return wrapModel(model, {
    doGenerate: (params) => model.doGenerate(markTools(params)),
    doStream: (params) => model.doStream(markTools(params)),
  });
}

/**
 * The body to hand fetch. A JSON body (a string with a content type the caller set) becomes bytes:
 * one native encode instead of undici's two passes in JS over the string (the same bytes: lone
 * surrogates become U+FFFD either way), with the markers of withSerializedTools replaced by the
 * bytes they stand for. A bare string body keeps undici's default `text/plain` and is left as is
 * (unless it carries markers: those are always replaced).
 */
export function requestBody(init: RequestInit | undefined): RequestInit['body'] {
  const body = init?.body;
  if (typeof body !== 'string') return body;
  const first = firstMarker(body);
  if (first < 0 && (body.length < 1024 || !hasContentType(init?.headers))) return body;
  return encode(body);
}

/**
 * fetch with the request's body as bytes (requestBody), sent once. Following redirects, undici
 * keeps a clone of the request (a tee of the body stream, every chunk copied) in case a redirect
 * must send it again, and Node 20's undici cannot send a byte body again at all (its buffer is
 * detached by then). So the bytes go with `redirect: 'error'`, which sends the request itself;
 * a provider that does redirect is then asked again the ordinary way, with the body as a string
 * (the server answered the first request with a redirect, not with work done).
 */
export async function sendOnce(
  fetchFn: typeof fetch,
  input: Parameters<typeof fetch>[0],
  init: RequestInit,
): Promise<Response> {
  const bytes = requestBody(init);
  if (bytes === init.body) return fetchFn(input, init);
  // The body as a string, markers replaced: what fetch gets when it may have to send it twice.
  const asString = () => ({ ...init, body: encode(init.body as string).toString('utf8') });
  if ((init.redirect ?? 'follow') !== 'follow' || 'window' in init) return fetchFn(input, asString());
  try {
    return await fetchFn(input, { ...init, body: bytes, redirect: 'error', window: null });
  } catch (error) {
    if ((error as { cause?: { message?: unknown } })?.cause?.message !== 'unexpected redirect') throw error;
    return fetchFn(input, asString());
  }
}

/** Where the body's first marker may start (-1: it has none). */
function firstMarker(body: string): number {
  const tool = bytes.length > 0 ? firstIndex(body) : -1;
  return messageBytes.size > 0 ? minIndex(tool, body.indexOf(MESSAGE_MARKER_START)) : tool;
}

/**
 * A prompt message's wire bytes, registered once (./prompt-messages.ts): the message goes to the
 * provider as a system message whose content is the marker, and requestBody puts the bytes in its
 * place. The bytes are dropped when `owner` (the prompt message) is collected.
 */
const MESSAGE_PREFIX = `\u0000svcm:${NONCE}:`;
const MESSAGE_MARKER_START = `{"role":"system","content":"\\u0000svcm:${NONCE}:`;
const MESSAGE_MARKER = new RegExp(`\\{"role":"system","content":"\\\\u0000svcm:${NONCE}:(\\d+)"\\}`, 'g');
const MESSAGE_MARKER_AT = new RegExp(MESSAGE_MARKER.source, 'y');
/** Past this many bytes of kept messages, new ones are sent as they are. */
const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;
const messageBytes = new Map<number, Buffer>();
let messageBytesTotal = 0;
let nextMessageId = 0;
const released = new FinalizationRegistry<number>((id) => {
  const stored = messageBytes.get(id);
  if (!stored) return;
  messageBytesTotal -= stored.length;
  messageBytes.delete(id);
});

/**
 * What the registry watches for a message: a token of its own that the message holds (through
 * `tokens`, a WeakMap: the token lives while the message does), never the message itself. Node
 * 20's V8 keeps a FinalizationRegistry's (and a WeakRef's) targets alive through every scavenge,
 * with all they reach, until a full GC: a registered prompt message, and what it reaches, was
 * promoted with every request (issue 17 item 4, p-promote). A token reaches nothing; a message
 * only in the WeakMap dies young as it did, its token with the next full GC, which drops the
 * bytes as the message's own collection did.
 */
export class MessageToken {
  constructor(
    readonly id: number,
    /** The message's earlier token, if it was marked before: kept as long as this one. */
    readonly earlier: MessageToken | undefined,
  ) {}
}
const tokens = new WeakMap<object, MessageToken>();

/** The marker text standing for `json` (the message's wire JSON), or undefined when full. */
export function messageMarker(owner: object, json: string): string | undefined {
  const stored = Buffer.from(json, 'utf8');
  if (messageBytesTotal + stored.length > MAX_MESSAGE_BYTES) return undefined;
  const id = nextMessageId++;
  messageBytes.set(id, stored);
  messageBytesTotal += stored.length;
  const token = new MessageToken(id, tokens.get(owner));
  tokens.set(owner, token);
  released.register(token, id);
  return `${MESSAGE_PREFIX}${id}`;
}

/**
 * The body's bytes with every marker replaced, in one buffer. The stretch of the body from its
 * first tool marker to the end of its last (the tool list) is the same text on every step of a run:
 * its bytes are kept (a few recent stretches) and copied in, so a step encodes only what changed
 * (the messages before it, the options after it). The messages of the prompt (./prompt-messages.ts)
 * are their markers' bytes, encoded when each message was first sent.
 */
function encode(body: string): Buffer<ArrayBuffer> {
  const pieces = bodyPieces(body);
  let size = 0;
  for (const piece of pieces)
    size += typeof piece === 'string' ? Buffer.byteLength(piece, 'utf8') : piece.length;
  const out = Buffer.allocUnsafeSlow(size);
  let offset = 0;
  for (const piece of pieces)
    offset += typeof piece === 'string' ? out.write(piece, offset, 'utf8') : piece.copy(out, offset);
  return out;
}

/**
 * The body's bytes with every marker replaced, as pieces in order (strings still to be encoded as
 * UTF-8, and kept bytes): what encode joins, and what ./http-transport.ts writes to the socket as
 * they are. A body without markers is one piece, itself.
 */
export function bodyPieces(body: string): (string | Buffer)[] {
  const pieces: (string | Buffer)[] = [];
  toolPieces(body, messagePieces(body, pieces), pieces);
  return pieces;
}

/** The body as a string with every marker replaced (what fetch gets when it may send it twice). */
export function splicedText(body: string): string {
  return firstMarker(body) < 0 ? body : encode(body).toString('utf8');
}

/** The body up to the end of its last message marker, as pieces; where the rest starts. */
function messagePieces(body: string, pieces: (string | Buffer)[]): number {
  if (messageBytes.size === 0) return 0;
  const first = body.indexOf(MESSAGE_MARKER_START);
  if (first < 0) return 0;
  const lastAt = body.lastIndexOf(MESSAGE_MARKER_START);
  MESSAGE_MARKER_AT.lastIndex = lastAt;
  const lastMatch = MESSAGE_MARKER_AT.exec(body);
  const end = lastMatch ? lastAt + lastMatch[0].length : lastAt;
  pieces.push(body.slice(0, first));
  for (const part of regionParts(body.slice(first, end))) pieces.push(part);
  return end;
}

/**
 * The stretches of message markers of recent bodies and their bytes, the most recent first. A
 * step's stretch is the last one's (of the same run) with the step's new messages after it: only
 * those are looked up, the rest is the kept bytes. A stretch's parts are joined into one buffer
 * only when a later stretch grows from it: a run of one step (a compat request) sends its parts
 * as they are, without a copy of the system prompt's bytes into a new buffer.
 */
interface Region {
  text: string;
  parts: Buffer[];
  joined?: Buffer;
}
const regions: Region[] = [];
const MAX_REGIONS = 8;

const joinedBytes = (entry: Region): Buffer =>
  (entry.joined ??= entry.parts.length === 1 ? entry.parts[0] : Buffer.concat(entry.parts));

function regionParts(region: string): readonly Buffer[] {
  let known: Region | undefined;
  for (const entry of regions)
    if ((!known || entry.text.length > known.text.length) && region.startsWith(entry.text)) known = entry;
  if (known?.text.length === region.length) return known.parts;
  const parts: Buffer[] = known ? [joinedBytes(known)] : [];
  let last = known ? known.text.length : 0;
  MESSAGE_MARKER.lastIndex = last;
  for (let match = MESSAGE_MARKER.exec(region); match; match = MESSAGE_MARKER.exec(region)) {
    const stored = messageBytes.get(Number(match[1]));
    if (!stored) continue;
    if (match.index > last) parts.push(Buffer.from(region.slice(last, match.index), 'utf8'));
    parts.push(stored);
    last = match.index + match[0].length;
  }
  MESSAGE_MARKER.lastIndex = 0;
  if (last < region.length) parts.push(Buffer.from(region.slice(last), 'utf8'));
  const entry: Region = { text: region, parts };
  const i = known ? regions.indexOf(known) : -1;
  // The stretch it grew from is not asked again by its run.
  if (i >= 0) regions.splice(i, 1);
  regions.unshift(entry);
  if (regions.length > MAX_REGIONS) regions.pop();
  return parts;
}

/** The body from `from` to its end as pieces, the tool list's stretch as its kept bytes. */
function toolPieces(body: string, from: number, pieces: (string | Buffer)[]): void {
  const rest = from > 0 ? body.slice(from) : body;
  const first = markerAt(rest, bytes.length > 0 ? firstIndex(rest) : -1);
  const last = first && markerAt(rest, lastIndex(rest));
  if (!first || !last) {
    pieces.push(firstIndex(rest) >= 0 && bytes.length > 0 ? encodeMarked(rest) : rest);
    return;
  }
  pieces.push(rest.slice(0, first.at), spanBytes(rest.slice(first.at, last.end)), rest.slice(last.end));
}

/** The marked stretches of recent bodies and their bytes, the most recent first. */
const spans: { text: string; bytes: Buffer<ArrayBuffer> }[] = [];
const MAX_SPANS = 4;

function spanBytes(span: string): Buffer<ArrayBuffer> {
  const i = spans.findIndex((entry) => entry.text === span);
  const entry = i >= 0 ? spans.splice(i, 1)[0] : { text: span, bytes: encodeMarked(span) };
  spans.unshift(entry);
  if (spans.length > MAX_SPANS) spans.pop();
  return entry.bytes;
}

const firstIndex = (body: string) =>
  minIndex(body.indexOf(SCHEMA_MARKER_START), body.indexOf(DESCRIPTION_PREFIX_JSON));
const lastIndex = (body: string) =>
  Math.max(body.lastIndexOf(SCHEMA_MARKER_START), body.lastIndexOf(DESCRIPTION_PREFIX_JSON));
const minIndex = (a: number, b: number) => (a < 0 ? b : b < 0 ? a : Math.min(a, b));
const SCHEMA_MARKER_START = '{"$svcSchema":';
/** One marker exactly at an index (sticky). */
const MARKER_AT = new RegExp(MARKER.source, 'y');

function markerAt(body: string, at: number): { at: number; end: number } | undefined {
  if (at < 0) return undefined;
  MARKER_AT.lastIndex = at;
  const match = MARKER_AT.exec(body);
  return match && Number(match[1] ?? match[2]) < bytes.length ? { at, end: at + match[0].length } : undefined;
}

/** A text's bytes with every marker replaced: the pieces written straight into one buffer. */
function encodeMarked(text: string): Buffer<ArrayBuffer> {
  const matches: { at: number; end: number; id: number }[] = [];
  let size = 0;
  let last = 0;
  for (const match of text.matchAll(MARKER)) {
    const id = Number(match[1] ?? match[2]);
    size += Buffer.byteLength(text.slice(last, match.index), 'utf8') + bytes[id].length;
    last = match.index + match[0].length;
    matches.push({ at: match.index, end: last, id });
  }
  size += Buffer.byteLength(text.slice(last), 'utf8');
  const out = Buffer.allocUnsafeSlow(size);
  let offset = 0;
  last = 0;
  for (const { at, end, id } of matches) {
    offset += out.write(text.slice(last, at), offset, 'utf8');
    offset += bytes[id].copy(out, offset);
    last = end;
  }
  out.write(text.slice(last), offset, 'utf8');
  return out;
}

function hasContentType(headers: RequestInit['headers']): boolean {
  if (!headers) return false;
  if (headers instanceof Headers) return headers.has('content-type');
  if (Array.isArray(headers)) return headers.some(([name]) => name.toLowerCase() === 'content-type');
  return Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
}
