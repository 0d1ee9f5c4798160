/**
 * How a model retypes an edit: each corpus case (a real hunk as old_string/new_string) is replayed
 * with one slip of a kind below, applied deterministically (seeded by case id and kind). A slip
 * that repeats a context line changes it the same way in old_string and new_string, as a model
 * copying its own text would. Each replay says what the right outcome is: the edit applied
 * (the file then equals the intended post-image), refused as ambiguous (old_string occurs more than
 * once), or, for a misremembered token, applied or refused with the right region named.
 * @module
 */
import { createHash } from 'node:crypto';

export interface CorpusCase {
  id: string;
  /** Pre-image, relative to the fixtures' pre/ folder (without the .txt suffix). */
  file: string;
  /** 1-based line of the pre-image where old starts. */
  line: number;
  old: string;
  new: string;
  /** sha256 of the pre-image with the edit applied. */
  sha256: string;
}

export const SLIP_KINDS = [
  'exact',
  'indent_shift',
  'indent_style',
  'trailing_whitespace',
  'crlf_file',
  'crlf_model',
  'edge_blank_dropped',
  'line_numbers',
  'inner_spacing',
  'context_trimmed',
  'stale_token',
  'combined',
] as const;
export type SlipKind = (typeof SLIP_KINDS)[number];

/** Percent of cases given each kind in the mix (a kind that does not fit a case passes to the next that does). */
export const SLIP_MIX: Record<SlipKind, number> = {
  exact: 15,
  indent_shift: 15,
  indent_style: 10,
  trailing_whitespace: 10,
  crlf_file: 5,
  crlf_model: 5,
  edge_blank_dropped: 5,
  line_numbers: 10,
  inner_spacing: 5,
  context_trimmed: 10,
  stale_token: 5,
  combined: 5,
};

export type Expectation = 'apply' | 'ambiguous' | 'apply_or_refuse';

export interface Replay {
  id: string;
  kind: SlipKind;
  path: string;
  /** The file as on disk, and as it must be after the intended edit. */
  content: string;
  expected: string;
  old: string;
  new: string;
  expect: Expectation;
  /** 1-based lines the intended edit covers, to check what a refusal names. */
  region: { start: number; end: number };
}

interface Text {
  old: string[];
  new: string[];
}

export function seeded(text: string): () => number {
  let seed = createHash('sha256').update(text).digest().readUInt32LE(0);
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The replay of `kase` with a slip of `kind`, or undefined when that kind does not fit the case. */
export function makeReplay(kase: CorpusCase, source: string, kind: SlipKind): Replay | undefined {
  const random = seeded(`${kase.id}|${kind}`);
  const text: Text = { old: kase.old.split('\n'), new: kase.new.split('\n') };
  const at = offsetOfLine(source, kase.line);
  const expected = source.slice(0, at) + kase.new + source.slice(at + kase.old.length);
  const base = {
    id: kase.id,
    kind,
    path: kase.file,
    content: source,
    expected,
    expect: 'apply' as Expectation,
    region: { start: kase.line, end: kase.line + text.old.length - 1 },
  };
  const unit = indentUnit(source);
  const slipped = (t: Text, extra: Partial<Replay> = {}): Replay => ({
    ...base,
    old: t.old.join('\n'),
    new: t.new.join('\n'),
    ...extra,
  });
  // A slip of old_string's whitespace that leaves text found verbatim in the file (its lines'
  // ends aside) is not a matching problem: the text then names that place, new_string as written.
  const visible = (t: Text): Replay | undefined => {
    const bare = t.old.map((l) => l.trimEnd()).join('\n');
    return source.includes(bare) ? undefined : slipped(t);
  };
  switch (kind) {
    case 'exact':
      return slipped(text);
    case 'indent_shift':
      return visible(shiftIndent(text, unit, random));
    case 'indent_style':
      return visible(restyleIndent(text, unit, random));
    case 'trailing_whitespace':
      return slipped(addTrailingWhitespace(text, random));
    case 'crlf_file':
      return slipped(text, { content: toCrlf(source), expected: toCrlf(expected) });
    case 'crlf_model':
      return { ...slipped(text), old: text.old.join('\r\n'), new: text.new.join('\r\n') };
    case 'edge_blank_dropped': {
      const t = dropEdgeBlank(text);
      return t && slipped(t);
    }
    case 'line_numbers':
      return slipped({
        old: numbered(text.old, kase.line),
        new: random() < 0.5 ? numbered(text.new, kase.line) : text.new,
      });
    case 'inner_spacing': {
      const t = squeezeSpacing(text);
      return t && slipped(t);
    }
    case 'context_trimmed':
      return trimContext(text, source, base, slipped);
    case 'stale_token': {
      const t = misremember(text, random);
      return t && slipped(t, { expect: 'apply_or_refuse' });
    }
    case 'combined': {
      const shifted = shiftIndent(text, unit, random, true);
      return visible(shifted) && slipped(addTrailingWhitespace(shifted, random));
    }
    default: {
      const never: never = kind;
      throw new Error(`unknown slip ${never}`);
    }
  }
}

/** The seeded kind of `kase` in the mix. */
export function mixKind(kase: CorpusCase, source: string): Replay {
  const random = seeded(`${kase.id}|mix`);
  let draw = random() * 100;
  let start = 0;
  for (const [i, kind] of SLIP_KINDS.entries()) {
    draw -= SLIP_MIX[kind];
    if (draw < 0) {
      start = i;
      break;
    }
  }
  for (let step = 0; step < SLIP_KINDS.length; step++) {
    const replay = makeReplay(kase, source, SLIP_KINDS[(start + step) % SLIP_KINDS.length]);
    if (replay) return replay;
  }
  throw new Error(`${kase.id}: no slip fits`);
}

/** How many lines at each end new repeats from old (its context), as the edit tool aligns them. */
function context(t: Text): { head: number; tail: number } {
  const most = Math.min(t.old.length, t.new.length);
  let head = 0;
  while (head < most && t.old[head] === t.new[head]) head++;
  let tail = 0;
  while (tail < most - head && t.old[t.old.length - 1 - tail] === t.new[t.new.length - 1 - tail]) tail++;
  return { head, tail };
}

/** Change old line `j` by `change`, and new's copy of it when it is context. */
function mirror(t: Text, j: number, change: (line: string) => string): Text {
  const { head, tail } = context(t);
  const old = [...t.old];
  const replacement = [...t.new];
  old[j] = change(old[j]);
  if (j < head) replacement[j] = change(replacement[j]);
  else if (j >= t.old.length - tail) {
    const k = t.new.length - (t.old.length - j);
    replacement[k] = change(replacement[k]);
  }
  return { old, new: replacement };
}

const lead = (line: string) => line.slice(0, line.length - line.trimStart().length);
const mapLines = (t: Text, f: (line: string) => string): Text => ({ old: t.old.map(f), new: t.new.map(f) });

function shiftIndent(t: Text, unit: string, random: () => number, oneLevel = false): Text {
  const lines = [...t.old, ...t.new].filter((l) => l.trim() !== '');
  const mode = random();
  if (!oneLevel && mode < 0.4) {
    const base = lines.map(lead).reduce((a, b) => {
      let n = 0;
      while (n < a.length && a[n] === b[n]) n++;
      return a.slice(0, n);
    });
    if (base) return mapLines(t, (l) => (l.trim() === '' ? l : l.slice(base.length)));
  }
  if (mode < 0.7 && lines.every((l) => l.startsWith(unit))) {
    return mapLines(t, (l) => (l.trim() === '' ? l : l.slice(unit.length)));
  }
  return mapLines(t, (l) => (l.trim() === '' ? l : unit + l));
}

function restyleIndent(t: Text, unit: string, random: () => number): Text {
  const target = unit === '\t' ? (random() < 0.5 ? '  ' : '    ') : random() < 0.5 ? '\t' : '    ';
  return mapLines(t, (line) => {
    const indent = lead(line);
    let level = 0;
    let at = 0;
    while (indent.startsWith(unit, at)) {
      level++;
      at += unit.length;
    }
    return target.repeat(level) + indent.slice(at) + line.slice(indent.length);
  });
}

function addTrailingWhitespace(t: Text, random: () => number): Text {
  // Blank lines take the indentation of the line after them, as an editor's auto-indent leaves them.
  const fill = (lines: string[]) =>
    lines.map((l, j) => (l === '' ? lead(lines.slice(j + 1).find((n) => n.trim() !== '') ?? '') : l));
  let out: Text = { old: fill(t.old), new: fill(t.new) };
  const candidates = out.old.flatMap((l, j) => (l.trim() === '' ? [] : [j]));
  for (let n = 0; n < Math.min(2, candidates.length); n++) {
    const j = candidates[Math.floor(random() * candidates.length)];
    out = mirror(out, j, (l) => (l.endsWith(' ') ? l : `${l} `));
  }
  return out;
}

function dropEdgeBlank(t: Text): Text | undefined {
  if (t.old.length > 1 && t.old[0] === '' && t.new[0] === '')
    return { old: t.old.slice(1), new: t.new.slice(1) };
  if (t.old.length > 1 && t.old.at(-1) === '' && t.new.at(-1) === '') {
    return { old: t.old.slice(0, -1), new: t.new.slice(0, -1) };
  }
  return undefined;
}

function numbered(lines: string[], first: number): string[] {
  return lines.map((l, j) => `${String(first + j).padStart(6)}\t${l}`);
}

function squeezeSpacing(t: Text): Text | undefined {
  let out = t;
  for (const [j, line] of t.old.entries()) {
    const squeezed = line.replace(/(\S) {2,}(?=\S)/g, '$1 ');
    if (squeezed !== line) out = mirror(out, j, (l) => l.replace(/(\S) {2,}(?=\S)/g, '$1 '));
  }
  if (out !== t) return out;
  const j = t.old.findIndex((l) => l.includes(', '));
  return j < 0 ? undefined : mirror(t, j, (l) => l.replace(', ', ','));
}

function trimContext(
  t: Text,
  source: string,
  base: Omit<Replay, 'old' | 'new'>,
  slipped: (t: Text, extra?: Partial<Replay>) => Replay,
): Replay | undefined {
  const { head, tail } = context(t);
  if (head === 0 && tail === 0) return undefined;
  let old = t.old.slice(head, t.old.length - tail);
  let replacement = t.new.slice(head, t.new.length - tail);
  let start = base.region.start + head;
  if (replacement.length === 0) {
    // A pure deletion takes the line break after the lines (before them at the end of the block).
    const text = tail > 0 ? `${old.join('\n')}\n` : `\n${old.join('\n')}`;
    if (text.trim() === '') return undefined;
    return slipped(
      { old: [text], new: [''] },
      {
        expect: count(source, text) > 1 ? 'ambiguous' : 'apply',
        region: { start, end: start + old.length - 1 },
      },
    );
  }
  if (old.length === 0) {
    // A pure insertion keeps one line to anchor it: the one before, else the one after.
    if (head > 0) {
      old = [t.old[head - 1]];
      replacement = [t.old[head - 1], ...replacement];
      start--;
    } else {
      old = [t.old[t.old.length - tail]];
      replacement = [...replacement, old[0]];
    }
  }
  const text = old.join('\n');
  if (text.trim() === '') return undefined; // nobody sends only blank lines as old_string
  return slipped(
    { old, new: replacement },
    {
      expect: count(source, text) > 1 ? 'ambiguous' : 'apply',
      region: { start, end: start + old.length - 1 },
    },
  );
}

function misremember(t: Text, random: () => number): Text | undefined {
  const { head, tail } = context(t);
  const lines = t.old.flatMap((l, j) =>
    (j < head || j >= t.old.length - tail) && /[A-Za-z_$][\w$]{2,}/.test(l) ? [j] : [],
  );
  if (lines.length === 0) return undefined;
  const j = lines[Math.floor(random() * lines.length)];
  const words = [...t.old[j].matchAll(/[A-Za-z_$][\w$]{2,}/g)];
  const word = words[Math.floor(random() * words.length)];
  const at = word.index ?? 0;
  const changed = word[0].endsWith('s') ? word[0].slice(0, -1) : `${word[0]}s`;
  return mirror(t, j, (l) => l.slice(0, at) + changed + l.slice(at + word[0].length));
}

function count(source: string, text: string): number {
  let n = 0;
  for (let at = source.indexOf(text); at !== -1; at = source.indexOf(text, at + 1)) n++;
  return n;
}

const units = new Map<string, string>();

function indentUnit(source: string): string {
  const known = units.get(source);
  if (known) return known;
  const unit = detectUnit(source);
  units.set(source, unit);
  return unit;
}

function detectUnit(source: string): string {
  const lines = source.split('\n');
  const tabs = lines.filter((l) => l.startsWith('\t')).length;
  const spaces = lines.filter((l) => l.startsWith(' ')).length;
  return tabs > spaces ? '\t' : '  ';
}

function toCrlf(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}

function offsetOfLine(text: string, line: number): number {
  let at = 0;
  for (let n = 1; n < line; n++) at = text.indexOf('\n', at) + 1;
  return at;
}
