// For ./promoted-nvp.mjs (BENCH_IDLE_SCAVENGES=1): on SIGUSR2 the service runs two scavenges,
// 50 ms apart, and prints a line before each, so the bench tells their `--trace-gc-nvp` lines
// apart. After the load, with no request running, the second promotes what outlived the first:
// what is still reachable (or pinned) of the requests that ended before them.
const gc = globalThis.gc;
process.on('SIGUSR2', () => {
  process.stdout.write('idle-scavenge 1\n');
  gc({ type: 'minor' });
  setTimeout(() => {
    process.stdout.write('idle-scavenge 2\n');
    gc({ type: 'minor' });
    process.stdout.write('idle-scavenge done\n');
  }, 50);
});
