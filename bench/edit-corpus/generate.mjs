#!/usr/bin/env node
// Generates the edit corpus in bench/edit-corpus/fixtures/ from the hunks between two published
// versions of MIT-licensed npm packages. Run by hand (it needs the npm registry):
//   node bench/edit-corpus/generate.mjs
// Each hunk becomes one edit case as a model would write it: old_string is the hunk's removed
// lines with 1–3 lines of context on each side (seeded), grown with more context until it occurs
// once in the file; new_string is the same context around the added lines. The fixtures are the
// pre-image files (stored with a .txt suffix so no linter or compiler reads them as code), one
// JSON line per case with the sha256 of the file after the edit, and each package's licence.
// The bench and the tests read only the fixtures: no network.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { structuredPatch } from 'diff';

const HERE = import.meta.dirname;
const OUT = join(HERE, 'fixtures');
const PACKAGES = [
  { name: 'commander', from: '9.5.0', to: '14.0.0', license: 'LICENSE', include: /\.(js|mjs|ts)$/ },
  { name: 'execa', from: '9.0.0', to: '9.6.0', license: 'license', include: /^(lib\/.*|index)\.js$/ },
];
const MAX_OLD_LINES = 40;
const MAX_NEW_LINES = 50;
const MAX_EXTRA_CONTEXT = 12;

function seeded(text) {
  let seed = createHash('sha256').update(text).digest().readUInt32LE(0);
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function unpack(spec, dir) {
  const file = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', dir], {
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .pop();
  const target = join(dir, spec);
  mkdirSync(target, { recursive: true });
  execFileSync('tar', ['xzf', join(dir, file), '-C', target]);
  return join(target, 'package');
}

function walk(root, prefix = '') {
  return readdirSync(join(root, prefix)).flatMap((name) => {
    const rel = prefix ? `${prefix}/${name}` : name;
    return statSync(join(root, rel)).isDirectory() ? walk(root, rel) : [rel];
  });
}

function count(text, search) {
  let n = 0;
  for (let at = text.indexOf(search); at !== -1; at = text.indexOf(search, at + 1)) n++;
  return n;
}

/** One case from one hunk, or undefined when it is too large or changes nothing. */
function caseOf(pkg, file, before, hunk, index) {
  const body = hunk.lines.filter((l) => !l.startsWith('\\'));
  const leading = body.findIndex((l) => !l.startsWith(' '));
  const trailing = body.length - 1 - body.findLastIndex((l) => !l.startsWith(' '));
  const random = seeded(`${pkg.name}/${file}#${index}`);
  const keepBefore = Math.min(leading, 1 + Math.floor(random() * 3));
  const keepAfter = Math.min(trailing, 1 + Math.floor(random() * 3));
  const core = body.slice(leading - keepBefore, body.length - trailing + keepAfter);
  let oldLines = core.filter((l) => l[0] !== '+').map((l) => l.slice(1));
  let newLines = core.filter((l) => l[0] !== '-').map((l) => l.slice(1));
  const fileLines = before.split('\n');
  let start = hunk.oldStart - 1 + (leading - keepBefore);
  if (oldLines.length === 0) {
    // Pure addition at the start of the file without context: take the first line as context.
    oldLines = [fileLines[start]];
    newLines = [...newLines, fileLines[start]];
  }
  let end = start + oldLines.length;
  for (let extra = 0; count(before, oldLines.join('\n')) > 1 && extra < MAX_EXTRA_CONTEXT; extra++) {
    if (extra % 2 === 0 && start > 0) {
      start--;
      oldLines = [fileLines[start], ...oldLines];
      newLines = [fileLines[start], ...newLines];
    } else if (end < fileLines.length) {
      oldLines = [...oldLines, fileLines[end]];
      newLines = [...newLines, fileLines[end]];
      end++;
    }
  }
  const old = oldLines.join('\n');
  const replacement = newLines.join('\n');
  if (old === replacement || oldLines.length > MAX_OLD_LINES || newLines.length > MAX_NEW_LINES)
    return undefined;
  if (count(before, old) !== 1) return undefined;
  const at = fileLines.slice(0, start).join('\n').length + (start > 0 ? 1 : 0);
  if (before.slice(at, at + old.length) !== old) throw new Error(`${file} hunk ${index}: position mismatch`);
  const after = before.slice(0, at) + replacement + before.slice(at + old.length);
  return {
    id: `${pkg.name}/${file}#${index}`,
    file: `${pkg.name}/${file}`,
    line: start + 1,
    old,
    new: replacement,
    sha256: createHash('sha256').update(after).digest('hex'),
  };
}

const work = mkdtempSync(join(tmpdir(), 'svc-edit-corpus-'));
try {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(join(OUT, 'pre'), { recursive: true });
  const cases = [];
  const manifest = [];
  for (const pkg of PACKAGES) {
    const from = unpack(`${pkg.name}@${pkg.from}`, work);
    const to = unpack(`${pkg.name}@${pkg.to}`, work);
    writeFileSync(join(OUT, `LICENSE-${pkg.name}`), readFileSync(join(from, pkg.license)));
    let hunks = 0;
    let kept = 0;
    for (const file of walk(to).sort()) {
      if (!pkg.include.test(file) || !existsSync(join(from, file))) continue;
      const before = readFileSync(join(from, file), 'utf8');
      const after = readFileSync(join(to, file), 'utf8');
      const patch = structuredPatch(file, file, before, after, '', '', { context: 3 });
      const made = patch.hunks.map((h, i) => caseOf(pkg, file, before, h, i + 1)).filter(Boolean);
      hunks += patch.hunks.length;
      kept += made.length;
      if (made.length === 0) continue;
      cases.push(...made);
      const target = join(OUT, 'pre', pkg.name, `${file}.txt`);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, before);
    }
    manifest.push({
      package: pkg.name,
      from: pkg.from,
      to: pkg.to,
      license: `LICENSE-${pkg.name}`,
      hunks,
      cases: kept,
    });
  }
  writeFileSync(join(OUT, 'cases.jsonl'), `${cases.map((c) => JSON.stringify(c)).join('\n')}\n`);
  writeFileSync(
    join(OUT, 'manifest.json'),
    `${JSON.stringify({ generated_by: 'bench/edit-corpus/generate.mjs', packages: manifest }, null, 2)}\n`,
  );
  process.stdout.write(
    `${cases.length} cases: ${manifest.map((m) => `${m.package} ${m.from}→${m.to} ${m.cases}/${m.hunks} hunks`).join(', ')}\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
