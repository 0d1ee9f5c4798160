/**
 * The TUI holds glibc's mmap threshold as the service does (issue 17 item 4, src/util/malloc.ts),
 * once its first frame is up (src/surfaces/cli/commands/tui.ts): on Node 24 it took ≈ 10 MB off
 * the RSS after a 200-message session (docs/performance.md). The built `svc` runs under tmux with
 * a preload (NODE_OPTIONS) that notes its pid and, at exit, probes the threshold as
 * test/http/service-malloc.test.ts does: a freed 4 MB block, then 200 blocks of 256 KB by glibc's
 * `malloc` (through koffi): from an arena when the freed block raised the threshold, each mapped
 * on its own when it is held (but for those an arena's free chunks have room for); each block's
 * own chunk header says which (not the process's count of mapped blocks, which the TUI's other
 * threads change meanwhile).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { STEP_MS, svcInTmux } from '../helpers/tmux';
import { until } from '../helpers/until';

const KOFFI = resolve(__dirname, '../../node_modules/koffi');

const PRELOAD = `
const fs = require('node:fs');
fs.appendFileSync(process.env.PROBE_LOG, 'pid ' + process.pid + '\\n');
process.on('exit', () => {
  const koffi = require(${JSON.stringify(KOFFI)});
  const lib = koffi.load('libc.so.6');
  const malloc = lib.func('void *malloc(size_t)');
  const free = lib.func('void free(void *)');
  free(malloc(4 * 1024 * 1024));
  const blocks = Array.from({ length: 200 }, () => malloc(256 * 1024));
  // A chunk's size word, right before the block, has glibc's IS_MMAPPED bit (2) when the block has
  // a mapping of its own.
  const mapped = blocks.filter((b) => (Number(koffi.decode(b, -8, 'uint64_t')) & 2) === 2).length;
  fs.appendFileSync(process.env.PROBE_LOG, 'mapped ' + mapped + '\\n');
  for (const b of blocks) free(b);
});
`;

/** Opens the TUI, waits for its prompt (and, when `held`, for koffi in its maps), quits, probes. */
async function probed(env: Record<string, string>, held: boolean): Promise<number> {
  // A configured provider (never asked): the TUI opens on its prompt, not the onboarding.
  const ws = tmpWorkspace({
    files: {
      'svc.toml': stringify({
        providers: { fake: { type: 'openai-compat', base_url: 'http://127.0.0.1:9/v1' } },
        models: { large: 'fake/m1' },
      }),
    },
  });
  const log = join(ws, 'probe.log');
  const preload = join(ws, 'probe.cjs');
  writeFileSync(preload, PRELOAD);
  const t = svcInTmux({
    cwd: ws,
    columns: 100,
    rows: 30,
    env: { NODE_OPTIONS: `--require ${preload}`, PROBE_LOG: log, ...env },
  });
  await t.until((s) => s.includes('ask anything'), 'the prompt');
  const pid = Number(readFileSync(log, 'utf8').match(/^pid (\d+)$/m)?.[1]);
  expect(pid).toBeGreaterThan(0);
  if (held) {
    // koffi loads in the TUI only to hold the threshold (the quiet trim comes after 10 s idle).
    await until(
      () => readFileSync(`/proc/${pid}/maps`, 'utf8').includes('koffi'),
      'koffi in the TUI',
      STEP_MS,
    );
  }
  t.type('', 'C-c');
  await t.until((s) => s.includes('press ctrl+c again'), 'the quit hint');
  t.type('', 'C-c');
  await t.until((s) => s.includes('svc-exit='), 'svc to exit');
  expect(t.screen()).toContain('svc-exit=0');
  const mapped = readFileSync(log, 'utf8').match(/^mapped (\d+)$/m)?.[1];
  expect(mapped, readFileSync(log, 'utf8')).toBeDefined();
  return Number(mapped);
}

describe.runIf(process.platform === 'linux')('the TUI with glibc malloc’s mmap threshold held', () => {
  it('COMPAT-PERF-513: once the TUI has started, 256 KB blocks are mapped one by one though a 4 MB block was freed', {
    timeout: 3 * STEP_MS,
  }, async () => {
    // All 200 less those malloc found room for in its arenas' free chunks (≈ 10 here).
    expect(await probed({}, true)).toBeGreaterThanOrEqual(150);
  });

  it("COMPAT-PERF-514: SVC_MALLOC_MMAP_THRESHOLD_KB=0 leaves glibc's own threshold (raised by the freed block)", {
    timeout: 3 * STEP_MS,
  }, async () => {
    expect(await probed({ SVC_MALLOC_MMAP_THRESHOLD_KB: '0' }, false)).toBe(0);
  });
});
