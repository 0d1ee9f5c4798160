/**
 * What an argv runs, read before the CLI loads, for the V8 settings the entry makes first thing
 * (util/heap.ts): whether it opens the terminal UI (`svc`, `svc tui …`, `svc attach …`, after the
 * root options; `holdYoungGeneration`) or starts the HTTP service (`svc service start http …`;
 * `keepGcOnMainThread`). Only a guess for that tuning: commander still parses the argv; a miss
 * costs memory or a little CPU, never behaviour.
 * @module
 */

/** The root options that take a value (`svc --cwd <dir>`), as registered in ./index.ts. */
const ROOT_OPTIONS_WITH_VALUE = new Set(['--cwd', '--data-dir', '--config', '-c']);
const TUI_COMMANDS = new Set(['tui', 'attach']);

/**
 * The index of the argv's first command word once the root options are skipped (argv.length when
 * there is none), or -1 when an option svc does not know at the root, or `--`, comes first.
 */
function commandIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    if (word === '--') return -1;
    if (!word.startsWith('-')) return i;
    if (ROOT_OPTIONS_WITH_VALUE.has(word)) i++;
    else if (!ROOT_OPTIONS_WITH_VALUE.has(word.split('=')[0] as string)) return -1;
  }
  return argv.length;
}

export function opensTui(argv: readonly string[]): boolean {
  const at = commandIndex(argv);
  if (at < 0) return false;
  return at === argv.length || TUI_COMMANDS.has(argv[at] as string);
}

export function startsHttpService(argv: readonly string[]): boolean {
  const at = commandIndex(argv);
  return at >= 0 && argv[at] === 'service' && argv[at + 1] === 'start' && argv[at + 2] === 'http';
}
