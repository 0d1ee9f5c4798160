#!/usr/bin/env node
/**
 * Whether dist/ was built from the tree as it is, so `npm test` can skip a build that would change
 * nothing (a clean clone's `npm ci` already builds through `prepare`; CI then ran the same build
 * again before each suite).
 *
 * `write`: after a build, records a hash of the build's inputs in dist/.build-inputs.
 * `check`: exits 0 when dist/main.js and dist/web/index.html exist and that hash is the inputs'
 * hash now; 1 otherwise (no dist, a failed or partial build: tsdown's clean removes the stamp
 * first, or any input changed), and `npm test` builds.
 *
 * The inputs: everything under src/ and build/, the lockfile (the bundled dependencies), and the
 * build's configuration files. Contents are hashed, not times, so a checkout or a copy that keeps
 * or resets modification times cannot fool it.
 * @module
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const stamp = join(root, 'dist', '.build-inputs');
const TREES = ['src', 'build'];
const FILES = [
  'package.json',
  'package-lock.json',
  'tsdown.config.ts',
  'vite.web.config.ts',
  'tsconfig.json',
];

function files(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...files(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

function inputsHash() {
  const hash = createHash('sha256');
  const paths = [
    ...TREES.flatMap((tree) => (existsSync(join(root, tree)) ? files(join(root, tree)) : [])),
    ...FILES.map((file) => join(root, file)).filter((path) => existsSync(path)),
  ].sort();
  for (const path of paths) {
    hash.update(relative(root, path));
    hash.update('\0');
    hash.update(readFileSync(path));
    hash.update('\0');
  }
  return hash.digest('hex');
}

const command = process.argv[2];
if (command === 'write') {
  writeFileSync(stamp, `${inputsHash()}\n`);
} else if (command === 'check') {
  const built =
    existsSync(join(root, 'dist', 'main.js')) && existsSync(join(root, 'dist', 'web', 'index.html'));
  const fresh = built && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === inputsHash();
  if (fresh) process.stdout.write('dist/ is built from this tree (scripts/dist-stamp.mjs): no build\n');
  process.exit(fresh ? 0 : 1);
} else {
  process.stderr.write('usage: node scripts/dist-stamp.mjs write|check\n');
  process.exit(2);
}
