import { describe, expect, it } from 'vitest';
import { type ReexecProcess, reexecWithTunedMalloc, tunedMallocEnv } from './malloc';

const glibc = () => true;

describe('tunedMallocEnv', () => {
  it('COMPAT-PERF-501: holds the mmap threshold at 128 KB and remembers GLIBC_TUNABLES as it was', () => {
    expect(tunedMallocEnv({ PATH: '/bin' }, glibc)).toEqual({
      PATH: '/bin',
      GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=131072',
      SVC_GLIBC_TUNABLES_BEFORE: '',
    });
    expect(tunedMallocEnv({ GLIBC_TUNABLES: 'glibc.pthread.rseq=0' }, glibc)).toEqual({
      GLIBC_TUNABLES: 'glibc.pthread.rseq=0:glibc.malloc.mmap_threshold=131072',
      SVC_GLIBC_TUNABLES_BEFORE: 'glibc.pthread.rseq=0',
    });
    expect(tunedMallocEnv({ SVC_MALLOC_MMAP_THRESHOLD_KB: '64' }, glibc)?.GLIBC_TUNABLES).toBe(
      'glibc.malloc.mmap_threshold=65536',
    );
  });

  it('tunes nothing off glibc, with an own malloc tunable, when switched off, or once run again', () => {
    expect(tunedMallocEnv({}, () => false)).toBeUndefined();
    expect(tunedMallocEnv({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, glibc)).toBeUndefined();
    expect(tunedMallocEnv({ SVC_MALLOC_MMAP_THRESHOLD_KB: '0' }, glibc)).toBeUndefined();
    expect(tunedMallocEnv({ SVC_GLIBC_TUNABLES_BEFORE: '' }, glibc)).toBeUndefined();
  });
});

describe('reexecWithTunedMalloc', () => {
  const fake = (env: NodeJS.ProcessEnv, execve?: ReexecProcess['execve']): ReexecProcess => ({
    env,
    platform: 'linux',
    execPath: '/usr/bin/node',
    execArgv: ['--trace-gc'],
    argv: ['/usr/bin/node', '/opt/svc/main.js', 'service', 'start', 'http'],
    execve,
  });
  /** An execve that records its calls, then throws as a failed one does (a real one does not return). */
  const recordingExecve = () => {
    const calls: unknown[][] = [];
    const execve = ((...args: unknown[]) => {
      calls.push(args);
      throw new Error('execve is a test double');
    }) as ReexecProcess['execve'];
    return { calls, execve };
  };

  it('runs the same command again, node flags kept, with the tuned environment', () => {
    const { calls, execve } = recordingExecve();
    reexecWithTunedMalloc(fake({ HOME: '/h' }, execve), glibc);
    expect(calls).toEqual([
      [
        '/usr/bin/node',
        ['/usr/bin/node', '--trace-gc', '/opt/svc/main.js', 'service', 'start', 'http'],
        { HOME: '/h', GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=131072', SVC_GLIBC_TUNABLES_BEFORE: '' },
      ],
    ]);
  });

  it('in the process run again: GLIBC_TUNABLES back as it was, so spawned commands do not inherit it', () => {
    const unset = fake({
      GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=131072',
      SVC_GLIBC_TUNABLES_BEFORE: '',
    });
    reexecWithTunedMalloc(unset, glibc);
    expect(unset.env).toEqual({});
    const own = fake({
      GLIBC_TUNABLES: 'glibc.pthread.rseq=0:glibc.malloc.mmap_threshold=131072',
      SVC_GLIBC_TUNABLES_BEFORE: 'glibc.pthread.rseq=0',
    });
    reexecWithTunedMalloc(own, glibc);
    expect(own.env).toEqual({ GLIBC_TUNABLES: 'glibc.pthread.rseq=0' });
  });

  it('COMPAT-PERF-507: runs once a process: after bin/svc.cjs put GLIBC_TUNABLES back, main.js does not run it again', () => {
    const { calls, execve } = recordingExecve();
    const again = fake(
      { GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=131072', SVC_GLIBC_TUNABLES_BEFORE: '' },
      execve,
    );
    reexecWithTunedMalloc(again, glibc);
    expect(again.env).toEqual({});
    // The environment now looks untuned: only the mark keeps the second call from a re-exec.
    reexecWithTunedMalloc(again, glibc);
    expect(calls).toEqual([]);
    const first = fake({}, execve);
    reexecWithTunedMalloc(first, glibc);
    reexecWithTunedMalloc(first, glibc);
    expect(calls).toHaveLength(1);
  });

  it('does nothing without execve (Node 20) or off Linux', () => {
    const env = { HOME: '/h' };
    reexecWithTunedMalloc(fake(env), glibc);
    reexecWithTunedMalloc(
      {
        ...fake(env, () => {
          throw new Error('not to be called');
        }),
        platform: 'darwin',
      },
      glibc,
    );
    expect(env).toEqual({ HOME: '/h' });
  });
});
