// Runs bench/compat-rounds.mjs against a throwaway PostgreSQL database (bench/pg-cluster.mjs) and/or
// SQLite, alternating: `node bench/pg-probe-run.mjs [pairs]`. BENCH_STORES picks and orders the
// stores of a pair (default `sqlite,postgres`; `postgres-unix` connects through the cluster's Unix
// socket instead of TCP). Env as compat-rounds.mjs's (BENCH_CONCURRENCY, BENCH_ROUNDS,
// BENCH_NODE_ARGS, BENCH_MARKS, BENCH_STRACE); prints PostgreSQL's statements and
// transactions over the whole run of each postgres node (start-up, migration and warm-up included).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from './pg-cluster.mjs';

const pairs = Number(process.argv[2] ?? 1);
const pg = await startPostgres();
try {
  for (let i = 0; i < pairs; i++) {
    for (const store of (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',')) {
      const tcpUrl = store !== 'sqlite' ? await pg.createDatabase('svc_probe') : undefined;
      let url = tcpUrl;
      // `postgres-unix` (in BENCH_STORES) or BENCH_PG_UNIX=1: through the cluster's Unix socket, not TCP loopback.
      if (url && (store === 'postgres-unix' || process.env.BENCH_PG_UNIX)) {
        const dir = readdirSync(tmpdir())
          .map((d) => join(tmpdir(), d))
          .find((d) => existsSync(join(d, `.s.PGSQL.${pg.port}`)));
        const parsed = new URL(url);
        url = `postgres://postgres@localhost:${pg.port}${parsed.pathname}?host=${encodeURIComponent(dir)}`;
      }
      console.log(`== ${store} pair ${i + 1}`);
      const out = execFileSync(process.execPath, [new URL('./compat-rounds.mjs', import.meta.url).pathname], {
        env: { ...process.env, ...(url ? { BENCH_STORE_URL: url } : {}) },
        encoding: 'utf8',
      });
      console.log(out.trimEnd());
      if (url) {
        await new Promise((r) => setTimeout(r, 1500));
        console.log('pg counters (whole run):', JSON.stringify(await pg.counters(tcpUrl)));
      }
    }
  }
} finally {
  pg.stop();
}
