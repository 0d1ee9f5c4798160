// Runs ./search-index-step.ts (the message search index's cost to a step's writes, SQLite): bundled
// and run by ./bundled-ts.mjs.
// `node bench/search-index-step.mjs`; BENCH_BLOCK, BENCH_BLOCKS, BENCH_CATCH_UP_EVERY: see the .ts.
import { runBundled } from './bundled-ts.mjs';

await runBundled('search-index-step');
