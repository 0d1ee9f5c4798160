// Cold start of the built binary against bare `node -e 0`, same environment, median of N runs.
// Target (issue 17): the `svc` command (bin/svc.cjs) `--version` within 1.1x of `node -e 0`;
// dist/main.js (the ESM bundle's entry, what tests spawn) is shown beside it.
// Also `svc service start http` to its listening line, as it starts (it holds glibc's mmap
// threshold through koffi, src/util/malloc.ts) and with SVC_MALLOC_MMAP_THRESHOLD_KB=0 (koffi not
// loaded): what the tuning costs a service's start (BENCH_SERVICE_RUNS, default 9, each). Through
// the `svc` command (bin/svc.cjs) and through dist/main.js.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const BIN = resolve(ROOT, '../dist/main.js');
const COMMAND = resolve(ROOT, '../bin/svc.cjs');
const RUNS = Number(process.env.BENCH_RUNS ?? 25);
const SERVICE_RUNS = Number(process.env.BENCH_SERVICE_RUNS ?? 9);

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

/** Milliseconds from spawning `svc service start http` to its listening line; then SIGTERM. */
function serviceStart(cwd, env, entry) {
  return new Promise((resolveMs, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(
      process.execPath,
      [entry, 'service', 'start', 'http', '--port', '0', '--token', 'bench-token-1234'],
      {
        cwd,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let ms;
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.on('data', (d) => {
      out += d;
      if (ms === undefined && out.includes('svc: listening on ')) {
        ms = Number(process.hrtime.bigint() - start) / 1e6;
        child.kill('SIGTERM');
      }
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (ms === undefined) reject(new Error(`svc service start http exited ${code} before listening`));
      else resolveMs(ms);
    });
  });
}

/** Round-robin: the `svc` command, dist/main.js, the command with the malloc re-exec off. */
async function serviceStarts(cwd, env) {
  const variants = [
    [COMMAND, env],
    [BIN, env],
    [COMMAND, { ...env, SVC_MALLOC_MMAP_THRESHOLD_KB: '0' }],
  ];
  const samples = variants.map(() => []);
  for (let i = 0; i < SERVICE_RUNS + 1; i++) {
    for (const [index, [entry, each]] of variants.entries()) {
      const ms = await serviceStart(cwd, each, entry);
      if (i >= 1) samples[index].push(ms);
    }
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
    const [service, serviceMain, serviceUntuned] = await serviceStarts(ws, env);
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
      { name: 'svc service start http to listening (bin/svc.cjs, median ms)', value: service.toFixed(1) },
      { name: 'the same through dist/main.js (median ms)', value: serviceMain.toFixed(1) },
      {
        name: 'bin/svc.cjs, malloc not tuned (SVC_MALLOC_MMAP_THRESHOLD_KB=0; median ms)',
        value: serviceUntuned.toFixed(1),
      },
    ];
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
}
