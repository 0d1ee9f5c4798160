/**
 * Indentation mapping for loosely matched edits: when old_string matched the file only with its
 * indentation ignored, the changed lines of new_string are re-indented the way old_string's lines
 * map onto the file's (a uniform shift such as one level deeper, or another unit such as tabs for
 * two spaces). The mapping is fitted on every matched line pair and must reproduce each of them
 * exactly; when two fits disagree on new_string and the indentation units of the two texts do not
 * settle it, nothing is guessed.
 * @module
 */

/** Maps one leading-whitespace string of the model's text to the file's, or undefined if it cannot. */
export type IndentMap = (indent: string) => string | undefined;

/** Indentation units tried when converting between styles. */
const UNITS = ['\t', '  ', '    ', '        '] as const;

interface Candidate {
  map: IndentMap;
  /** Units this fit assumes for the model's text and the file; undefined for a plain shift. */
  units?: { from: string; to: string };
}

export function leadingWhitespace(line: string): string {
  return line.slice(0, line.length - line.trimStart().length);
}

/**
 * Fit the map from `pairs` (model indent, file indent of the same matched line) and apply it to
 * `targets` (the indents of new_string's changed lines). Returns the mapped indents, or undefined
 * when no fit reproduces every pair or the fits disagree without a tie-breaker.
 */
export function mapIndentation(
  pairs: Array<[string, string]>,
  targets: string[],
  units: { model?: string; file?: string },
): string[] | undefined {
  if (targets.length === 0) return [];
  const fits = candidates(pairs).filter((c) => pairs.every(([from, to]) => c.map(from) === to));
  const outputs = (list: Candidate[]) => {
    const seen = new Map<string, string[]>();
    for (const c of list) {
      const mapped = targets.map((t) => c.map(t));
      if (mapped.some((m) => m === undefined)) continue;
      seen.set(JSON.stringify(mapped), mapped as string[]);
    }
    return [...seen.values()];
  };
  const all = outputs(fits);
  if (all.length === 1) return all[0];
  if (all.length === 0) return undefined;
  // Disagreement: prefer the fit whose units are the ones each text is indented with (a text that
  // shows none is taken to share the other's; with neither known, a plain shift).
  const model = units.model ?? units.file;
  const file = units.file ?? units.model;
  const preferred = fits.filter((c) =>
    c.units ? c.units.from === model && c.units.to === file : model === file,
  );
  const chosen = outputs(preferred);
  return chosen.length === 1 ? chosen[0] : undefined;
}

function candidates(pairs: Array<[string, string]>): Candidate[] {
  if (pairs.length === 0) return [{ map: (indent) => indent }];
  const [from, to] = pairs[0];
  const list: Candidate[] = [];
  if (to.endsWith(from)) {
    const added = to.slice(0, to.length - from.length);
    list.push({ map: (indent) => added + indent });
  }
  if (from.endsWith(to) && from !== to) {
    const removed = from.slice(0, from.length - to.length);
    list.push({ map: (indent) => (indent.startsWith(removed) ? indent.slice(removed.length) : undefined) });
  }
  for (const source of UNITS) {
    for (const target of UNITS) {
      if (source === target) continue;
      const a = parseIndent(from, source);
      const b = parseIndent(to, target);
      if (!a || !b || a.rest !== b.rest) continue;
      const shift = b.level - a.level;
      list.push({
        units: { from: source, to: target },
        map: (indent) => {
          const parsed = parseIndent(indent, source);
          if (!parsed || parsed.level + shift < 0) return undefined;
          return target.repeat(parsed.level + shift) + parsed.rest;
        },
      });
    }
  }
  return list;
}

/** An indent as whole units plus the spaces left over (a doc comment's " * " alignment). */
function parseIndent(indent: string, unit: string): { level: number; rest: string } | undefined {
  if (unit === '\t') {
    const tabs = indent.length - indent.replace(/^\t+/, '').length;
    const rest = indent.slice(tabs);
    return rest.includes('\t') ? undefined : { level: tabs, rest };
  }
  if (indent.includes('\t')) return undefined;
  return { level: Math.floor(indent.length / unit.length), rest: ' '.repeat(indent.length % unit.length) };
}

/**
 * The indentation unit a text is written with: a tab when most indented lines start with one,
 * otherwise the most common step between consecutive lines' indents (doc-comment lines that start
 * with "*" aside). Undefined when the lines do not show one.
 */
export function detectIndentUnit(lines: readonly string[], limit = 5000): string | undefined {
  let tabs = 0;
  let spaces = 0;
  const steps = new Map<number, number>();
  let previous: number | undefined;
  for (const line of lines.slice(0, limit)) {
    const body = line.trimStart();
    if (body === '' || body.startsWith('*')) continue;
    const indent = line.slice(0, line.length - body.length);
    if (indent.startsWith('\t')) tabs++;
    else if (indent.startsWith(' ')) spaces++;
    if (indent.includes('\t')) {
      previous = undefined;
      continue;
    }
    if (previous !== undefined && indent.length !== previous) {
      const step = Math.abs(indent.length - previous);
      steps.set(step, (steps.get(step) ?? 0) + 1);
    }
    previous = indent.length;
  }
  if (tabs > spaces) return '\t';
  let best: number | undefined;
  for (const [step, count] of steps) {
    if (best === undefined || count > (steps.get(best) ?? 0) || (count === steps.get(best) && step < best)) {
      best = step;
    }
  }
  return best === undefined ? undefined : ' '.repeat(best);
}
