/**
 * Whether an argv opens the terminal UI (`svc`, `svc tui …`, `svc attach …`, after the root
 * options), read before the CLI loads: the entry sets the TUI's heap up first thing
 * (`holdYoungGeneration`, util/heap.ts). Only a guess for that tuning: commander still parses the
 * argv; a miss costs memory or a little CPU, never behaviour.
 * @module
 */

/** The root options that take a value (`svc --cwd <dir>`), as registered in ./index.ts. */
const ROOT_OPTIONS_WITH_VALUE = new Set(['--cwd', '--data-dir', '--config', '-c']);
const TUI_COMMANDS = new Set(['tui', 'attach']);

export function opensTui(argv: readonly string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    if (word === '--') return false;
    if (!word.startsWith('-')) return TUI_COMMANDS.has(word);
    if (ROOT_OPTIONS_WITH_VALUE.has(word)) i++;
    else if (!ROOT_OPTIONS_WITH_VALUE.has(word.split('=')[0] as string)) return false;
  }
  return true;
}
