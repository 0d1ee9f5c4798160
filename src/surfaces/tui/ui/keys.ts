/**
 * The key map, shown by /help and in docs/tui.md.
 * @module
 */
export const KEYS: [string, string][] = [
  ['enter', 'send the prompt (queued if a run is active)'],
  ['alt+enter, shift+enter, \\ then enter', 'new line'],
  ['ctrl+enter (ctrl+j)', 'queue the prompt to run after the active run'],
  ['↑ / ↓ at the first/last line', 'prompt history'],
  ['esc', 'cancel the active run (closes a dialog first)'],
  ['ctrl+p', 'command palette'],
  ['ctrl+s', 'sessions'],
  ['ctrl+n', 'new session'],
  ['ctrl+o', 'show or hide reasoning'],
  ['ctrl+u / ctrl+k', 'clear to line start / end'],
  ['ctrl+a / ctrl+e', 'line start / end'],
  ['ctrl+c', 'clear the prompt; twice on an empty prompt quits'],
  ['/', 'slash commands (tab completes)'],
];
