// Edits that land (issue 22, item 6): the edit corpus (bench/edit-corpus/fixtures, real hunks
// between two published versions of commander and of execa) replayed through the edit tool's
// replacement with the slips a model makes (bench/edit-corpus/slips.ts). Two runs:
// - mix: each case once, with its seeded slip (the documented mix, exact cases included);
// - matrix: each case with every slip that fits it.
// Reported per slip kind: the share applied with the intended result among replays that should
// apply (target >= 98% overall), refusals of genuinely ambiguous old_strings that name the place,
// wrong applications (must be 0) and refusals that do not name the closest region (must be 0).
// The replay code is bundled from TypeScript with tsdown's API into node_modules/.cache.
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const TARGET = 0.98;

async function loadReplay(outDir) {
  const { build } = await import('tsdown');
  await build({
    cwd: ROOT,
    config: false,
    entry: { replay: join(ROOT, 'bench/edit-corpus/replay.ts') },
    outDir,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    dts: false,
    clean: true,
    logLevel: 'silent',
    fixedExtension: false,
  });
  return import(pathToFileURL(join(outDir, 'replay.js')).href);
}

const percent = (n, d) => (d === 0 ? '-' : `${((100 * n) / d).toFixed(1)}%`);

function rowsFor(mode, table) {
  const rows = [];
  for (const [kind, s] of Object.entries(table)) {
    if (s.replays === 0) continue;
    const parts = [`applied ${s.applied}/${s.shouldApply} (${percent(s.applied, s.shouldApply)})`];
    if (s.shouldRefuse) parts.push(`ambiguous refused ${s.refusedNamed}/${s.shouldRefuse}`);
    if (s.either) {
      parts.push(
        `stale token ok ${s.eitherOk}/${s.either} (${s.eitherApplied} applied, ${s.eitherOk - s.eitherApplied} refused naming the region)`,
      );
    }
    if (s.wrong) parts.push(`WRONG ${s.wrong}`);
    if (s.unnamed) parts.push(`unnamed refusals ${s.unnamed}`);
    const row = { name: `${mode}: ${kind} (${s.replays})`, value: parts.join(', ') };
    if (kind === 'all') {
      const share = s.applied / s.shouldApply;
      rows.push(row, {
        name: `${mode}: share applied correctly`,
        value: percent(s.applied, s.shouldApply),
        target: `>= ${TARGET * 100}%, 0 wrong`,
        pass: share >= TARGET && s.wrong === 0 && s.unnamed === 0,
      });
      rows.push({
        name: `${mode}: matched by`,
        value: Object.entries(s.matches)
          .map(([m, n]) => `${m} ${n}`)
          .join(', '),
      });
    } else rows.push(row);
  }
  return rows;
}

export async function run() {
  const replayModule = await loadReplay(join(ROOT, 'node_modules', '.cache', 'svc-bench-edit-corpus'));
  const corpus = replayModule.loadCorpus(join(ROOT, 'bench', 'edit-corpus', 'fixtures'));
  const rows = [{ name: 'corpus cases', value: String(corpus.cases.length) }];
  for (const mode of ['mix', 'matrix']) {
    const outcomes = replayModule.replays(corpus, mode).map(replayModule.replay);
    rows.push(...rowsFor(mode, replayModule.summarize(outcomes)));
    if (process.env.BENCH_EDIT_VERBOSE) {
      for (const o of outcomes) {
        if (o.status === 'applied' || (o.expect === 'ambiguous' && o.status === 'ambiguous')) continue;
        process.stdout.write(`  ${mode} ${o.kind} ${o.id}: ${o.status}${o.match ? ` (${o.match})` : ''}\n`);
        if (o.message) process.stdout.write(`    ${o.message.split('\n')[0].slice(0, 300)}\n`);
      }
    }
  }
  return rows;
}
