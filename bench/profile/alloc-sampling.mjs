// Where a process allocates, garbage included: a preload (`--import`) that starts V8's sampling
// heap profiler with the objects collected by minor and major GCs kept in the profile (Node's
// `--heap-prof` keeps only what is still alive at the end, which hides per-request garbage) and
// writes `alloc-<pid>.heapprofile` when the process exits. The benches pass svc no environment of
// theirs, so the options ride on the module's URL (`dir`, default the temp dir; `bytes`, the
// sampling interval, default 4096; `minor=0` leaves out what a scavenge collected, so the profile
// holds what survived one: promoted to the old generation or copied within the young). For the compat bench (450 requests through svc with 2 rounds):
//   BENCH_NODE_ARGS="--import=file://$PWD/bench/profile/alloc-sampling.mjs?dir=/tmp/alloc" \
//   BENCH_COMPAT_ROUNDS=2 node bench/run.mjs compat
// then `node bench/profile/alloc-diff.mjs <before.heapprofile> <after.heapprofile> 450`.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const options = new URL(import.meta.url).searchParams;
const dir = options.get('dir') ?? tmpdir();
const session = new Session();
session.connect();
session.post('HeapProfiler.startSampling', {
  samplingInterval: Number(options.get('bytes') ?? 4096),
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: options.get('minor') !== '0',
});
// The in-process session answers synchronously, so the profile is written before the exit ends.
process.on('exit', () => {
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (!error) writeFileSync(join(dir, `alloc-${process.pid}.heapprofile`), JSON.stringify(result.profile));
  });
});
