/**
 * Replays the edit corpus through the edit tool's replacement (`replaceText`, what `edit` and
 * `multiedit` run) and scores each replay against its intended outcome. Used by
 * bench/edit-corpus.bench.mjs (the figures) and test/tools/edit-corpus.test.ts (the floor).
 * @module
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../../src/errors';
import { type MatchKind, replaceText } from '../../src/workspace/text-replace';
import {
  type CorpusCase,
  type Expectation,
  makeReplay,
  mixKind,
  type Replay,
  SLIP_KINDS,
  type SlipKind,
} from './slips';

export const FIXTURES = join(import.meta.dirname, 'fixtures');

export interface Corpus {
  cases: CorpusCase[];
  sources: Map<string, string>;
}

export type Status = 'applied' | 'wrong' | 'ambiguous' | 'not_found' | 'error';

export interface Outcome {
  id: string;
  kind: SlipKind;
  expect: Expectation;
  status: Status;
  match?: MatchKind;
  /** For a refusal: whether it names the intended place (the closest region, or one of the ambiguous lines). */
  namesRegion: boolean;
  message?: string;
}

export interface KindSummary {
  replays: number;
  /** Replays that should apply, and those that did with the intended result. */
  shouldApply: number;
  applied: number;
  /** Replays whose old_string occurs more than once, and those refused as ambiguous naming the place. */
  shouldRefuse: number;
  refusedNamed: number;
  /** Misremembered-token replays: applied correctly, or refused naming the region. */
  either: number;
  eitherOk: number;
  eitherApplied: number;
  /** Applied with a result other than the intended one: a defect. */
  wrong: number;
  /** Refusals that do not name the intended place. */
  unnamed: number;
  matches: Partial<Record<MatchKind, number>>;
}

/** Load the fixtures and check each case's post-image hash, so a damaged fixture fails loudly. */
export function loadCorpus(dir = FIXTURES): Corpus {
  const cases = readFileSync(join(dir, 'cases.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as CorpusCase);
  const sources = new Map<string, string>();
  for (const kase of cases) {
    if (!sources.has(kase.file))
      sources.set(kase.file, readFileSync(join(dir, 'pre', `${kase.file}.txt`), 'utf8'));
    const replay = makeReplay(kase, sources.get(kase.file) ?? '', 'exact');
    const hash = createHash('sha256')
      .update(replay?.expected ?? '')
      .digest('hex');
    if (hash !== kase.sha256) throw new Error(`${kase.id}: the fixture's post-image hash does not match`);
  }
  return { cases, sources };
}

export function replay(r: Replay): Outcome {
  const base = { id: r.id, kind: r.kind, expect: r.expect };
  try {
    const result = replaceText(r.content, r.old, r.new, { replaceAll: false, path: r.path });
    return {
      ...base,
      status: result.content === r.expected ? 'applied' : 'wrong',
      match: result.match,
      namesRegion: true,
    };
  } catch (error) {
    if (!SvcError.is(error)) throw error;
    const details = error.details ?? {};
    const message = error.message;
    if (details.reason === 'old_string_ambiguous') {
      const lines = (details.lines as number[]) ?? [];
      const hit = lines.find((l) => l >= r.region.start - 1 && l <= r.region.start + 1);
      return {
        ...base,
        status: 'ambiguous',
        // The message lists the first ten places and counts the rest; details list them all.
        namesRegion: hit !== undefined && (message.includes(String(hit)) || /and \d+ more\)/.test(message)),
        message,
      };
    }
    if (details.reason === 'old_string_not_found') {
      const closest = details.closest as { start_line: number; end_line: number } | undefined;
      const named =
        closest !== undefined &&
        closest.start_line <= r.region.end + 1 &&
        closest.end_line >= r.region.start - 1 &&
        message.includes(`Closest: line`);
      return { ...base, status: 'not_found', namesRegion: named, message };
    }
    return { ...base, status: 'error', namesRegion: false, message };
  }
}

/** Every case with its seeded slip (mode 'mix'), or with every slip that fits it ('matrix'). */
export function replays(corpus: Corpus, mode: 'mix' | 'matrix'): Replay[] {
  return corpus.cases.flatMap((kase) => {
    const source = corpus.sources.get(kase.file) ?? '';
    if (mode === 'mix') return [mixKind(kase, source)];
    return SLIP_KINDS.flatMap((kind) => makeReplay(kase, source, kind) ?? []);
  });
}

export function summarize(outcomes: Outcome[]): Record<SlipKind | 'all', KindSummary> {
  const empty = (): KindSummary => ({
    replays: 0,
    shouldApply: 0,
    applied: 0,
    shouldRefuse: 0,
    refusedNamed: 0,
    either: 0,
    eitherOk: 0,
    eitherApplied: 0,
    wrong: 0,
    unnamed: 0,
    matches: {},
  });
  const table = Object.fromEntries(['all', ...SLIP_KINDS].map((k) => [k, empty()])) as Record<
    SlipKind | 'all',
    KindSummary
  >;
  for (const o of outcomes) {
    for (const row of [table[o.kind], table.all]) {
      row.replays++;
      if (o.status === 'wrong') row.wrong++;
      if (o.status !== 'applied' && o.status !== 'wrong' && !o.namesRegion) row.unnamed++;
      if (o.match) row.matches[o.match] = (row.matches[o.match] ?? 0) + 1;
      if (o.expect === 'apply') {
        row.shouldApply++;
        if (o.status === 'applied') row.applied++;
      } else if (o.expect === 'ambiguous') {
        row.shouldRefuse++;
        if (o.status === 'ambiguous' && o.namesRegion) row.refusedNamed++;
      } else {
        row.either++;
        if (o.status === 'applied') row.eitherApplied++;
        if (
          o.status === 'applied' ||
          ((o.status === 'not_found' || o.status === 'ambiguous') && o.namesRegion)
        ) {
          row.eitherOk++;
        }
      }
    }
  }
  return table;
}
