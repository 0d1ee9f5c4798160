// Two sampling heap profiles (./alloc-sampling.mjs) of the same load compared: the bytes each
// function allocated itself, per request, the largest falls and rises. Functions are keyed by name
// and bundle chunk name (the hash of a chunk's file name left out, so two builds line up).
// `node bench/profile/alloc-diff.mjs <before.heapprofile> <after.heapprofile> <requests> [top]`
import { readFileSync } from 'node:fs';

const [beforeFile, afterFile, requestsArg, topArg] = process.argv.slice(2);
const requests = Number(requestsArg);
const top = Number(topArg ?? 15);

function load(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const bytes = new Map();
  let total = 0;
  const walk = (node) => {
    const { functionName, url } = node.callFrame;
    const chunk = url.replace(/^.*\/([\w.-]+?)(-[\w-]{8})?\.m?js$/, '$1');
    const key = `${functionName || '(anonymous)'} ${chunk}`;
    bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return { bytes, total };
}

const before = load(beforeFile);
const after = load(afterFile);
const kb = (n) => `${(n / requests / 1024).toFixed(1).padStart(7)} KB`;
console.log(`allocated per request: ${kb(before.total)} → ${kb(after.total)}`);
const keys = new Set([...before.bytes.keys(), ...after.bytes.keys()]);
const deltas = [...keys]
  .map((key) => [key, (after.bytes.get(key) ?? 0) - (before.bytes.get(key) ?? 0)])
  .sort((a, b) => a[1] - b[1]);
console.log('\nlargest falls');
for (const [key, delta] of deltas.slice(0, top)) console.log(kb(delta), key);
console.log('\nlargest rises');
for (const [key, delta] of deltas.slice(-top).reverse()) if (delta > 0) console.log(kb(delta), key);
