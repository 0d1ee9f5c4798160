/**
 * Web tools (family core-web): `fetch` (a URL as markdown, text or HTML) and `download` (a URL to
 * a workspace file). Limits and conversion live in src/workspace/web.ts.
 * @module
 */
import { z } from 'zod';
import { WEB_LIMITS } from '../workspace/web';
import { defineTool } from './core/define-tool';
import { opContext } from './core/op-context';

const url = () => z.string().min(1).describe('Absolute http:// or https:// URL.');

export const fetchInput = () =>
  z.strictObject({
    url: url(),
    format: z
      .enum(['markdown', 'text', 'html'])
      .default('markdown')
      .describe(
        'How to return HTML pages: markdown (default), plain text, or the raw html. Other text types come back as is.',
      ),
    timeout_seconds: z
      .number()
      .int()
      .min(1)
      .max(WEB_LIMITS.fetchMaxTimeoutSeconds)
      .optional()
      .describe(`Give up after this many seconds (default ${WEB_LIMITS.fetchTimeoutSeconds}).`),
  });

export const fetchTool = defineTool({
  name: 'fetch',
  // Reads the network, which the parity walker does not provide.
  parity: false,
  family: 'core-web',
  tag: 'primitive',
  description: `Fetch a URL and return its content as text: HTML pages converted to markdown (or plain text, or left as HTML), JSON and other text as is. Reads at most ${WEB_LIMITS.fetchMaxBodyBytes / 1024 / 1024} MB and returns at most ${WEB_LIMITS.fetchMaxChars} characters (the answer says when it was truncated). Binary content is refused: use download to save it. Follows redirects; no cookies or authentication.`,
  input: fetchInput,
  mutates: false,
  surfaces: { mcp: 'svc_fetch' },
  run: async (ctx, input) => ctx.app.ws.web.fetch(input, opContext(ctx, 'fetch')),
  toModelOutput: (result) =>
    `${result.content}${result.truncated ? `\n\n(truncated: ${result.final_url} is longer than what fetch returns)` : ''}`,
});

export const downloadInput = () =>
  z.strictObject({
    url: url(),
    path: z
      .string()
      .min(1)
      .describe('Workspace file to save to, relative to the workspace root. Parent directories are created.'),
    overwrite: z
      .boolean()
      .default(false)
      .describe('Replace the file if it exists. Default false (an existing file is refused).'),
    max_bytes: z
      .number()
      .int()
      .min(1)
      .max(WEB_LIMITS.downloadMaxBytes)
      .optional()
      .describe(`Refuse anything larger (default and maximum ${WEB_LIMITS.downloadMaxBytes} bytes).`),
    timeout_seconds: z
      .number()
      .int()
      .min(1)
      .max(WEB_LIMITS.downloadMaxTimeoutSeconds)
      .optional()
      .describe(`Give up after this many seconds (default ${WEB_LIMITS.downloadTimeoutSeconds}).`),
  });

export const download = defineTool({
  name: 'download',
  family: 'core-web',
  tag: 'primitive',
  description:
    'Download a URL to a file in the workspace (binary or text), streaming it to disk. Refuses to replace an existing file unless overwrite is true, and anything over max_bytes. Asks for approval.',
  input: downloadInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: { mcp: 'svc_download' },
  run: async (ctx, input) => ctx.app.ws.web.download(input, opContext(ctx, 'download')),
  toModelOutput: (result) =>
    `Saved ${result.url} to ${result.path} (${result.bytes} bytes${result.content_type ? `, ${result.content_type}` : ''}).`,
});
