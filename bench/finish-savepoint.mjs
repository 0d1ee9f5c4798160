// Runs ./finish-savepoint.ts (a body's SAVEPOINT + RELEASE inside an open SQLite batch): bundled
// and run by ./bundled-ts.mjs.
// `node bench/finish-savepoint.mjs`; BENCH_BLOCK, BENCH_BLOCKS: see the .ts.
import { runBundled } from './bundled-ts.mjs';

await runBundled('finish-savepoint');
