/**
 * The edit corpus (bench/edit-corpus: real hunks between published versions of commander and
 * execa, replayed with the slips a model makes) through the edit tool's replacement. Pins:
 * - no replay ever applies with a result other than the intended one (precision first);
 * - at least 98% of the replays that should apply do, in the seeded mix and in the full matrix;
 * - every refusal names the intended place: the closest region for a miss, the lines for an
 *   ambiguous old_string; a genuinely ambiguous old_string is refused, never guessed;
 * - the fixtures are intact (each case's post-image hash is checked on load).
 * The figures per slip kind are in `npm run bench -- edit-corpus`.
 */
import { describe, expect, it } from 'vitest';
import { loadCorpus, type Outcome, replay, replays, summarize } from '../../bench/edit-corpus/replay';
import { SLIP_KINDS } from '../../bench/edit-corpus/slips';

const corpus = loadCorpus();
const matrix = replays(corpus, 'matrix').map(replay);

const brief = (o: Outcome) => `${o.kind} ${o.id}: ${o.status}${o.match ? ` (${o.match})` : ''}`;

describe.each(['mix', 'matrix'] as const)('edit corpus, %s', (mode) => {
  const outcomes = mode === 'matrix' ? matrix : replays(corpus, mode).map(replay);
  const table = summarize(outcomes);

  it('never applies an edit with a result other than the intended one', () => {
    expect(outcomes.filter((o) => o.status === 'wrong').map(brief)).toEqual([]);
    expect(outcomes.filter((o) => o.status === 'error').map(brief)).toEqual([]);
  });

  it('applies at least 98% of the edits that should apply', () => {
    expect(table.all.shouldApply).toBeGreaterThanOrEqual(mode === 'mix' ? 200 : 2000);
    expect(table.all.applied / table.all.shouldApply).toBeGreaterThanOrEqual(0.98);
  });

  it('names the intended place in every refusal, and refuses every ambiguous old_string', () => {
    expect(outcomes.filter((o) => o.status !== 'applied' && !o.namesRegion).map(brief)).toEqual([]);
    expect(outcomes.filter((o) => o.expect === 'ambiguous' && o.status !== 'ambiguous').map(brief)).toEqual(
      [],
    );
    expect(table.all.shouldRefuse).toBeGreaterThan(0);
  });
});

describe('edit corpus', () => {
  it('has at least 200 cases from real changes, and every slip kind is replayed', () => {
    expect(corpus.cases.length).toBeGreaterThanOrEqual(200);
    const table = summarize(matrix);
    for (const kind of SLIP_KINDS) expect(table[kind].replays, kind).toBeGreaterThan(20);
    // The loose levels are what make the slips land: each of them is used.
    expect(Object.keys(table.all.matches).sort()).toEqual([
      'block_anchor',
      'exact',
      'indentation',
      'line_endings',
      'line_numbers',
      'trailing_whitespace',
      'whitespace',
    ]);
  });
});
