/**
 * Finds the 1-based line where a dotted key is written in a TOML text, so a type error can name
 * the line. Handles `[table]` headers, `[[array]]` headers, dotted keys and quoted keys; returns
 * undefined when the key is written some other way (inline tables), which is "line where known".
 * @module
 */
import { sameItems } from '../util/arrays';

export function locateKey(text: string, path: readonly string[]): number | undefined {
  const lines = text.split(/\r?\n/);
  let table: string[] = [];
  let best: number | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = stripComment(lines[i]).trim();
    if (!line) continue;
    const header = /^\[\[?\s*([^\]]+?)\s*\]\]?$/.exec(line);
    if (header) {
      table = splitKey(header[1]);
      if (best === undefined && startsWith(path, table) && table.length === path.length) best = i + 1;
      continue;
    }
    const assign = /^((?:"[^"]*"|'[^']*'|[A-Za-z0-9_.\-\s])+?)\s*=/.exec(line);
    if (!assign) continue;
    const full = [...table, ...splitKey(assign[1])];
    if (sameItems(full, path)) return i + 1;
    // A parent written as one line (inline table or array): the closest answer we have.
    if (startsWith(path, full) && full.length < path.length && best === undefined) best = i + 1;
  }
  return best;
}

function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quote) {
      if (ch === '\\' && quote === '"') i++;
      else if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '#') return line.slice(0, i);
  }
  return line;
}

export function splitKey(key: string): string[] {
  const parts: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(?:\.|$)/gy;
  let m: RegExpExecArray | null = re.exec(key);
  while (m !== null && m[0] !== '') {
    parts.push(m[1] ?? m[2] ?? m[3]);
    if (re.lastIndex >= key.length) break;
    m = re.exec(key);
  }
  return parts;
}

function startsWith(path: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= path.length && prefix.every((p, i) => p === path[i]);
}
