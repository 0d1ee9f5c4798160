/**
 * `fetch` (a URL as markdown, text or raw HTML) and `download` (a URL to a workspace file), with
 * time and size limits. HTTP(S) only. Both use the App's injectable `fetch`.
 * @module
 */
import { createWriteStream, existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { SvcError } from '../errors';
import type { Ids } from '../util/ids';
import { makeDirs } from '../util/make-dirs';
import { type CappedBody, readBodyCapped } from '../util/read-body';
import { approve, type OpContext, throwIfCancelled } from './context';
import type { ChangeCommitter } from './file-changes';
import type { FileHistory } from './file-history';
import { looksBinary, readRegularFile } from './file-io';
import { readTarget } from './file-load';
import type { PathResolver } from './paths';
import { blockedTargetError, guardedFetch, type Lookup } from './web-target';

export const WEB_LIMITS = {
  fetchTimeoutSeconds: 30,
  fetchMaxTimeoutSeconds: 120,
  /** Bytes read from the network for fetch. */
  fetchMaxBodyBytes: 5 * 1024 * 1024,
  /** Characters of converted text returned. */
  fetchMaxChars: 100_000,
  downloadTimeoutSeconds: 300,
  downloadMaxTimeoutSeconds: 600,
  downloadMaxBytes: 100 * 1024 * 1024,
} as const;

export interface FetchResult {
  url: string;
  /** The URL after redirects. */
  final_url: string;
  status: number;
  content_type: string;
  format: 'markdown' | 'text' | 'html';
  content: string;
  bytes: number;
  truncated: boolean;
}

export interface DownloadResult {
  url: string;
  path: string;
  bytes: number;
  content_type: string;
  change: 'create' | 'modify';
}

export interface WebOps {
  fetch(
    input: { url: string; format?: 'markdown' | 'text' | 'html'; timeout_seconds?: number },
    ctx: OpContext,
  ): Promise<FetchResult>;
  download(
    input: { url: string; path: string; overwrite?: boolean; timeout_seconds?: number; max_bytes?: number },
    ctx: OpContext,
  ): Promise<DownloadResult>;
}

export function createWebOps(deps: {
  fetch: typeof fetch;
  paths: PathResolver;
  dataDir: string;
  ids: Ids;
  changes: ChangeCommitter;
  history: FileHistory;
  bus: { publish(sessionId: string, type: string, payload: Record<string, unknown>): unknown };
}): WebOps {
  return {
    async fetch(input, ctx) {
      const url = parseUrl(input.url);
      const format = input.format ?? 'markdown';
      await approve(ctx, {
        title: `fetch ${url.href}`,
        scope: url.host,
        safe: true,
        details: { url: url.href, format },
      });
      const seconds = Math.min(
        input.timeout_seconds ?? WEB_LIMITS.fetchTimeoutSeconds,
        WEB_LIMITS.fetchMaxTimeoutSeconds,
      );
      const response = await request(deps.fetch, url, seconds, ctx.signal, format);
      const contentType = response.headers.get('content-type') ?? '';
      const { body, truncated: cut } = await readCapped(response, WEB_LIMITS.fetchMaxBodyBytes, seconds);
      if (!response.ok) {
        throw new SvcError(
          'unavailable',
          `url: ${url.href} answered HTTP ${response.status}${body.length ? `: ${clip(body.toString('utf8'), 300)}` : ''}`,
          { details: { status: response.status } },
        );
      }
      const isHtml =
        /html/i.test(contentType) ||
        (!contentType && /^\s*<(!doctype|html)/i.test(body.subarray(0, 200).toString()));
      if (!isHtml && !isTextual(contentType) && looksBinary(body)) {
        throw new SvcError(
          'invalid_input',
          `url: ${url.href} returned binary content (${contentType || 'unknown type'}, ${body.length}+ bytes); use download to save it to a file`,
        );
      }
      const raw = body.toString('utf8');
      let content = raw;
      if (isHtml && format !== 'html') content = await htmlTo(format, raw);
      const truncated = cut || content.length > WEB_LIMITS.fetchMaxChars;
      if (content.length > WEB_LIMITS.fetchMaxChars) content = content.slice(0, WEB_LIMITS.fetchMaxChars);
      return {
        url: input.url,
        final_url: response.url || url.href,
        status: response.status,
        content_type: contentType,
        format: isHtml ? format : 'text',
        content,
        bytes: body.length,
        truncated,
      };
    },

    async download(input, ctx) {
      const url = parseUrl(input.url);
      const target = deps.paths.resolve(input.path);
      const exists = existsSync(target.abs);
      if (exists && statSync(target.abs).isDirectory()) {
        throw new SvcError('invalid_input', `path: ${target.rel} is a directory; give a file path`);
      }
      if (exists && !input.overwrite) {
        throw new SvcError(
          'conflict',
          `path: ${target.rel} already exists; set overwrite: true to replace it`,
        );
      }
      const maxBytes = Math.min(input.max_bytes ?? WEB_LIMITS.downloadMaxBytes, WEB_LIMITS.downloadMaxBytes);
      await deps.changes.guard(ctx.tool, ctx.sessionId, target.inside ? [target.rel] : []);
      await approve(ctx, {
        title: `download ${url.href} → ${target.rel}`,
        scope: target.rel,
        details: { url: url.href, path: target.rel, overwrite: exists, max_bytes: maxBytes },
      });
      const seconds = Math.min(
        input.timeout_seconds ?? WEB_LIMITS.downloadTimeoutSeconds,
        WEB_LIMITS.downloadMaxTimeoutSeconds,
      );
      const response = await request(deps.fetch, url, seconds, ctx.signal, 'raw');
      if (!response.ok) {
        throw new SvcError('unavailable', `url: ${url.href} answered HTTP ${response.status}`, {
          details: { status: response.status },
        });
      }
      const declared = Number(response.headers.get('content-length') ?? '0');
      if (declared > maxBytes) {
        throw new SvcError(
          'invalid_input',
          `url: ${url.href} is ${declared} bytes, over the ${maxBytes}-byte limit`,
        );
      }
      const temp = join(deps.dataDir, 'downloads', `${deps.ids.next('dl')}.part`);
      makeDirs(dirname(temp));
      let bytes = 0;
      try {
        bytes = await streamCapped(response, temp, maxBytes, url);
        throwIfCancelled(ctx.signal, 'the download');
        // Re-check at the end: guards may have changed while the bytes arrived.
        await deps.changes.guard(ctx.tool, ctx.sessionId, target.inside ? [target.rel] : []);
        const before = exists ? readTarget(target, 'path') : null;
        makeDirs(dirname(target.abs));
        renameSync(temp, target.abs);
        await deps.history.record({
          sessionId: ctx.sessionId,
          runId: ctx.runId,
          tool: ctx.tool,
          path: target.rel,
          change: exists ? 'modify' : 'create',
          before,
          after: readRegularFile(target.abs),
          binary: true,
        });
        if (ctx.sessionId) {
          deps.bus.publish(ctx.sessionId, 'file.changed', {
            session_id: ctx.sessionId,
            ...(ctx.runId ? { run_id: ctx.runId } : {}),
            tool: ctx.tool,
            path: target.rel,
            change: exists ? 'modify' : 'create',
          });
        }
      } catch (error) {
        rmSync(temp, { force: true });
        if (SvcError.is(error)) throw error;
        if (ctx.signal?.aborted) throw new SvcError('cancelled', 'the download was cancelled');
        throw new SvcError(
          'unavailable',
          `url: download of ${url.href} failed: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
      return {
        url: input.url,
        path: target.rel,
        bytes,
        content_type: response.headers.get('content-type') ?? '',
        change: exists ? 'modify' : 'create',
      };
    },
  };
}

/** Writes the response body to `temp`, stopping past `maxBytes`; returns the bytes written. */
async function streamCapped(response: Response, temp: string, maxBytes: number, url: URL): Promise<number> {
  if (!response.body) throw new SvcError('unavailable', `url: ${url.href} sent no body`);
  let bytes = 0;
  const source = Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>);
  source.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > maxBytes) {
      source.destroy(
        new SvcError('invalid_input', `url: ${url.href} is larger than the ${maxBytes}-byte limit; stopped`),
      );
    }
  });
  await pipeline(source, createWriteStream(temp));
  return bytes;
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SvcError('invalid_input', `url: "${raw}" is not a valid URL; give an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SvcError('invalid_input', `url: only http and https URLs are fetched, not ${url.protocol}`);
  }
  return url;
}

/** As many redirects as a browser follows before giving up. */
const MAX_REDIRECTS = 20;

/**
 * One request, redirects followed here. Each hop is a `guardedFetch`: its address is checked before
 * it is asked and, with Node's fetch, again by the connection itself (what connects is what was
 * checked, a DNS answer changed in between cannot reach a metadata address). `lookup` is for tests.
 */
export async function request(
  fetchImpl: typeof fetch,
  url: URL,
  seconds: number,
  signal: AbortSignal | undefined,
  format: string,
  lookup?: Lookup,
): Promise<Response> {
  const timeout = AbortSignal.timeout(seconds * 1000);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const accept =
    format === 'markdown'
      ? 'text/markdown;q=1.0, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1'
      : format === 'raw'
        ? '*/*'
        : 'text/html;q=0.9, text/plain;q=0.8, */*;q=0.1';
  const init = {
    signal: combined,
    redirect: 'manual',
    headers: { accept, 'user-agent': 'svc' },
  } as RequestInit;
  try {
    let current = url;
    for (let hop = 0; ; hop++) {
      const target = current;
      const refuse = (blocked: string) => blockedTargetError(target, blocked);
      const response = await guardedFetch(fetchImpl, target, init, refuse, lookup, target);
      const location =
        response.status >= 300 && response.status < 400 ? response.headers.get('location') : null;
      if (!location) return response;
      await response.body?.cancel().catch(() => {});
      if (hop >= MAX_REDIRECTS)
        throw new SvcError('unavailable', `url: ${url.href} redirected more than ${MAX_REDIRECTS} times`);
      current = new URL(location, current);
      if (current.protocol !== 'http:' && current.protocol !== 'https:')
        throw new SvcError(
          'unavailable',
          `url: ${url.href} redirected to ${current.protocol} URL, which svc does not follow`,
        );
    }
  } catch (error) {
    if (SvcError.is(error)) throw error;
    if (signal?.aborted) throw new SvcError('cancelled', `the request to ${url.href} was cancelled`);
    if (timeout.aborted) throw new SvcError('timeout', `url: ${url.href} did not answer within ${seconds} s`);
    throw new SvcError('unavailable', `url: ${url.href} could not be fetched: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

async function readCapped(response: Response, maxBytes: number, seconds: number): Promise<CappedBody> {
  try {
    return await readBodyCapped(response, maxBytes);
  } catch (error) {
    throw new SvcError(
      'timeout',
      `reading the response failed or took more than ${seconds} s: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

function isTextual(contentType: string): boolean {
  return /^text\/|json|xml|javascript|yaml|toml|csv|markdown/i.test(contentType);
}

async function htmlTo(format: 'markdown' | 'text', html: string): Promise<string> {
  const { NodeHtmlMarkdown } = await import('node-html-markdown');
  const cleaned = html.replace(/<(script|style|noscript|svg|iframe)\b[\s\S]*?<\/\1>/gi, '');
  const markdown = NodeHtmlMarkdown.translate(cleaned).trim();
  if (format === 'markdown') return markdown;
  return markdown
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/^#{1,6}\s+/gm, '')
    .replace(/(\*\*|__|`)/g, '')
    .replace(/\n{3,}/g, '\n\n');
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
