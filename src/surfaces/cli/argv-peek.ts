/**
 * What an argv runs, read before the CLI loads: whether it opens the terminal UI (`svc`,
 * `svc tui …`, `svc attach …`, after the root options) or starts a long-lived service
 * (`svc service start …`). The entry sets their process up first thing (the TUI's heap,
 * `holdYoungGeneration`; the service's malloc, `holdMmapThreshold`). Only a guess for that
 * tuning: commander still parses the argv; a miss costs memory or a little CPU, never behaviour.
 * @module
 */

/** The root options that take a value (`svc --cwd <dir>`), as registered in ./index.ts. */
const ROOT_OPTIONS_WITH_VALUE = new Set(['--cwd', '--data-dir', '--config', '-c']);
const TUI_COMMANDS = new Set(['tui', 'attach']);
const SERVICES = new Set(['http', 'autopilot', 'mcp']);

/**
 * The argv from its first command word on, after the root options; undefined after `--` or an
 * option that is no root option (`--help`, `--version`).
 */
function fromCommand(argv: readonly string[]): readonly string[] | undefined {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    if (word === '--') return undefined;
    if (!word.startsWith('-')) return argv.slice(i);
    if (ROOT_OPTIONS_WITH_VALUE.has(word)) i++;
    else if (!ROOT_OPTIONS_WITH_VALUE.has(word.split('=')[0] as string)) return undefined;
  }
  return [];
}

export function opensTui(argv: readonly string[]): boolean {
  const command = fromCommand(argv);
  return command !== undefined && (command.length === 0 || TUI_COMMANDS.has(command[0] as string));
}

/** `svc service start http|autopilot|mcp …`. */
export function startsService(argv: readonly string[]): boolean {
  const command = fromCommand(argv);
  return command?.[0] === 'service' && command[1] === 'start' && SERVICES.has(command[2] as string);
}
