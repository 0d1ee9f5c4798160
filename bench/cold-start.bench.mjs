// Cold start of the built binary against bare `node -e 0`, same environment, median of N runs.
// Target (issue 17): the `svc` command (bin/svc.cjs) `--version` within 1.1x of `node -e 0`;
// dist/main.js (the ESM bundle's entry, what tests spawn) is shown beside it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const BIN = resolve(ROOT, '../dist/main.js');
const COMMAND = resolve(ROOT, '../bin/svc.cjs');
const RUNS = Number(process.env.BENCH_RUNS ?? 25);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Round-robin over the commands so machine load drifts hit all of them alike. */
function timeAll(commands, cwd, env) {
  const samples = commands.map(() => []);
  for (let i = 0; i < RUNS + 3; i++) {
    commands.forEach((args, index) => {
      const start = process.hrtime.bigint();
      const r = spawnSync(process.execPath, args, { cwd, env, stdio: 'ignore' });
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}`);
      if (i >= 3) samples[index].push(ms); // the first runs warm the page cache
    });
  }
  return samples.map(median);
}

export async function run() {
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const env = { PATH: process.env.PATH, HOME: join(ws, '.home') };
  if (process.env.NODE_EXTRA_CA_CERTS) env.NODE_EXTRA_CA_CERTS = process.env.NODE_EXTRA_CA_CERTS;
  try {
    const [node, command, version, status] = timeAll(
      [
        ['-e', '0'],
        [COMMAND, '--version'],
        [BIN, '--version'],
        [BIN, 'config', 'show-config-status', '--json'],
      ],
      ws,
      env,
    );
    return [
      { name: 'node -e 0 (median ms)', value: node.toFixed(1) },
      { name: 'svc --version (bin/svc.cjs, median ms)', value: command.toFixed(1) },
      {
        name: 'svc --version / node -e 0',
        value: (command / node).toFixed(2),
        target: '<= 1.1',
        pass: command / node <= 1.1,
      },
      { name: 'dist/main.js --version / node -e 0', value: (version / node).toFixed(2) },
      { name: 'svc config show-config-status --json (median ms)', value: status.toFixed(1) },
      { name: 'show-config-status / node -e 0', value: (status / node).toFixed(2) },
    ];
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
}
