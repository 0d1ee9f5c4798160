/**
 * Text an MCP server sends (tool names, titles, descriptions, error messages, HTTP error bodies,
 * stderr) made safe to show: it reaches terminals, permission prompts, ACP clients and the model.
 * Escape sequences and control characters are removed and bidi controls written out as
 * `<U+202E>` (`safeTerminalText`), so they cannot act on a terminal or reorder what is shown, and
 * the length is capped with an ellipsis.
 * @module
 */
import { capText, safeTerminalText } from '../util/terminal-text';

/** The longest name or title shown, in characters. */
export const MAX_LABEL_CHARS = 128;
/** The longest description passed on, in characters. */
export const MAX_DESCRIPTION_CHARS = 4096;

/** A one-line label (a tool name or title): line breaks and tabs become spaces. */
export function peerLabel(text: string, max = MAX_LABEL_CHARS): string {
  return capText(safeTerminalText(text).replace(/[\t\n]/g, ' '), max);
}

/** A description: keeps line breaks and tabs (a carriage return becomes a line break). */
export function peerText(text: string, max = MAX_DESCRIPTION_CHARS): string {
  return capText(safeTerminalText(text), max);
}

/** The longest error text of a server kept (a failed start, a call's error, an HTTP error body). */
export const MAX_ERROR_CHARS = 4096;

/** An error message with a server's text in it: made safe and cut at `max`, saying how long it was. */
export function peerError(text: string, max = MAX_ERROR_CHARS): string {
  // Only a bounded head is cleaned: the rest is cut anyway (a body can be megabytes).
  const head = text.length > max * 4 ? text.slice(0, max * 4) : text;
  const safe = safeTerminalText(head);
  if (head === text && safe.length <= max) return safe;
  return `${capText(safe, max)} [cut: ${text.length} characters in all]`;
}

/** Which strings of a JSON value `peerJson` makes safe (every string and key by default). */
export interface PeerJsonScope {
  /** Strings under these keys stay as sent (base64 `data` and `blob`: nothing a terminal acts on). */
  keep?: ReadonlySet<string>;
  /**
   * Only strings under these keys are made safe, and keys stay as sent (a schema's `description`
   * and `title`: its property names and enum values are what the server takes).
   */
  only?: ReadonlySet<string>;
}

/**
 * A JSON value a server sends (a tool result's content, its structured content, an input schema)
 * with its strings and object keys made safe (`safeTerminalText`: line breaks and tabs kept) and
 * nothing cut: a result has its own size limits. Copied without recursion: the depth is the
 * server's to choose.
 */
export function peerJson<T>(value: T, scope: PeerJsonScope = {}): T {
  if (typeof value === 'string') return safeTerminalText(value) as T;
  if (typeof value !== 'object' || value === null) return value;
  const { keep, only } = scope;
  const cleans = (key: string) => (only ? only.has(key) : !keep?.has(key));
  const root = emptyLike(value);
  const pending: [object, Record<string, unknown>][] = [[value, root]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [source, target] = next;
    for (const [key, child] of Object.entries(source)) {
      let copy: unknown = child;
      if (typeof child === 'string' && cleans(key)) copy = safeTerminalText(child);
      else if (typeof child === 'object' && child !== null) {
        copy = emptyLike(child);
        pending.push([child, copy as Record<string, unknown>]);
      }
      // Defined, not assigned: a key "__proto__" from JSON stays a plain key.
      Object.defineProperty(target, Array.isArray(target) || only ? key : safeTerminalText(key), {
        value: copy,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return root as T;
}

const emptyLike = (value: object): Record<string, unknown> =>
  (Array.isArray(value) ? [] : {}) as Record<string, unknown>;
