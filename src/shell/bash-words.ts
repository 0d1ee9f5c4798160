/**
 * Words of a parsed bash command: their literal value (or null when only known at run time),
 * the variables they read, and small path helpers shared by the analysis.
 * @module
 */
import { isAbsolute, relative, sep } from 'node:path';
import type { Node } from 'web-tree-sitter';
import { PRIVILEGED, unwrap, type Word } from './bash-rules';

/** The literal value of a word, or null when it depends on run-time state. */
export function wordValue(node: Node, home: string | undefined): Word {
  switch (node.type) {
    case 'word': {
      const text = node.text.replace(/\\(.)/g, '$1');
      if (home && (text === '~' || text.startsWith('~/'))) return home + text.slice(1);
      return text;
    }
    case 'number':
      return node.text;
    case 'raw_string':
      return node.text.slice(1, -1);
    case 'string': {
      let out = '';
      for (const child of node.namedChildren) {
        if (!child) continue;
        const value =
          child.type === 'string_content'
            ? child.text.replace(/\\([$`"\\\n])/g, '$1')
            : wordValue(child, home);
        if (value === null) return null;
        out += value;
      }
      return out;
    }
    case 'simple_expansion':
    case 'expansion': {
      // $HOME is the one variable worth resolving: `rm -rf $HOME` must be recognised.
      const names = node.namedChildren.filter((c) => c !== null);
      if (home && names.length === 1 && names[0]?.type === 'variable_name' && names[0].text === 'HOME')
        return home;
      return null;
    }
    case 'concatenation': {
      let out = '';
      for (const child of node.namedChildren) {
        if (!child) continue;
        const value = wordValue(child, home);
        if (value === null) return null;
        out += value;
      }
      return out;
    }
    default:
      return null;
  }
}

/** The variables an expansion node reads (`$X`, `${X:-y}`, `${X[0]}`, `$((X+1))`), by name. */
export function expandedNames(node: Node): string[] {
  if (node.type === 'simple_expansion' || node.type === 'expansion') {
    const direct = node.namedChildren.find((c) => c?.type === 'variable_name');
    if (direct) return [direct.text];
    const subscript = node.namedChildren.find((c) => c?.type === 'subscript');
    const name = subscript?.childForFieldName('name');
    return name ? [name.text] : [];
  }
  if (node.type === 'arithmetic_expansion') {
    return node.descendantsOfType('variable_name').flatMap((n) => (n ? [n.text] : []));
  }
  return [];
}

export function firstCommandName(node: Node, home: string | undefined): string | undefined {
  const command = node.type === 'command' ? node : node.descendantsOfType('command')[0];
  const nameNode = command?.childForFieldName('name')?.namedChildren[0];
  if (!nameNode) return undefined;
  const value = wordValue(nameNode, home);
  if (value === null) return undefined;
  // Look through wrappers (`sudo sh`, `env sh`) to the program that reads the pipe.
  const words = [
    value,
    ...(command?.namedChildren.slice(1).map((c) => (c ? wordValue(c, home) : null)) ?? []),
  ];
  return unwrap(words.filter((w) => w !== null && !PRIVILEGED.has(w ?? ''))).argv[0] ?? value;
}

export function isInside(abs: string, root: string): boolean {
  const rel = relative(root, abs);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

export function isAncestorOrSelf(abs: string, root: string): boolean {
  return abs === root || isInside(root, abs);
}

export function clip(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Does a glob pattern (absolute, `*`, `?`, `[…]`) possibly name `target` or something inside it? */
export function globReaches(pattern: string, target: string, dotglob = false): boolean {
  const p = pattern.split('/').filter(Boolean);
  const t = target.split('/').filter(Boolean);
  for (let i = 0; i < Math.min(p.length, t.length); i++) {
    if (p[i] === '**' && dotglob) return true; // globstar (needs shopt, which also sets dotglob here)
    // Like bash: a pattern matches a hidden name only when it starts with a dot (or dotglob is on).
    if (t[i].startsWith('.') && !p[i].startsWith('.') && !dotglob) return false;
    if (!globSegment(p[i]).test(t[i])) return false;
  }
  // The pattern names the target or something inside it (a shorter pattern names an ancestor).
  return p.length >= t.length;
}

export function hasGlob(word: string): boolean {
  return /[*?[]/.test(word);
}

function globSegment(segment: string): RegExp {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i];
    if (c === '*') out += '.*';
    else if (c === '?') out += '.';
    else if (c === '[') {
      const end = segment.indexOf(']', i + 1);
      if (end === -1) out += '\\[';
      else {
        out += `[${segment
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}
