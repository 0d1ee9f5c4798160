// A --cpu-prof file of bench/compat-rounds.mjs read with the rounds' marks: what its readers
// (cpu-profile-capped.mjs, cpu-profile-areas.mjs, layer-table.mjs `--cpu`) share.
import { readFileSync } from 'node:fs';
import { bundledSource, bundleRegions } from './bundle-regions.mjs';

/**
 * The profile with its nodes by id and each node's parent, the bundle's regions of `distDir`, the
 * marks of rounds `from`..`to` and the requests they hold (`perRound` a round).
 */
export function loadRoundsProfile(file, marksFile, distDir, perRound, from, to) {
  const marks = JSON.parse(readFileSync(marksFile, 'utf8')).filter((m) => {
    const r = Number(m.label.slice(6));
    return m.label.startsWith('round ') && r >= Number(from) && r <= Number(to);
  });
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const requests = Number(perRound) * marks.length;
  return { marks, requests, regions: bundleRegions(distDir), profile, byId, parent };
}

/**
 * `each(node, µs)` for every sample inside a round that is not idle: its leaf node and its weight,
 * the time to the next sample.
 */
export function forEachRoundSample({ profile, marks, byId }, each) {
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (!marks.some((m) => t >= m.start && t <= m.end)) continue;
    const node = byId.get(profile.samples[i]);
    if (node.callFrame.functionName === '(idle)') continue;
    each(node, profile.timeDeltas[i + 1] ?? 0);
  }
}

/** A node's innermost svc frame (its own, else its nearest caller's in `src/`), as `{ file, fn }`. */
export function innermostSvcFrame({ regions, byId, parent }) {
  const memo = new Map();
  const frame = (id) => {
    if (memo.has(id)) return memo.get(id);
    const n = byId.get(id);
    const s = bundledSource(regions, n.callFrame.url, n.callFrame.lineNumber);
    const found = s?.startsWith('src/')
      ? { file: s, fn: n.callFrame.functionName || '(anonymous)' }
      : parent.has(id)
        ? frame(parent.get(id))
        : undefined;
    memo.set(id, found);
    return found;
  };
  return frame;
}
