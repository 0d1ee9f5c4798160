/**
 * The prompt editor as a pure function of (state, key): multi-line text with a cursor, so the
 * key bindings are testable without a terminal.
 * @module
 */
import type { Key } from 'ink';
import { insertPaste, type PasteState } from './paste';

/** The prompt's text and cursor; a big paste is kept beside it, shown as a placeholder (./paste.ts). */
export interface EditorState extends PasteState {
  value: string;
  cursor: number;
}

/**
 * A key as the TUI's root hands it on: `paste` marks a whole bracketed paste, `pasteTooBig` one
 * too big to hold, which comes with no text (key-input.tsx).
 */
export type EditorKey = Key & { paste?: boolean; pasteTooBig?: boolean };

export type EditorAction = 'submit' | 'queue' | 'history-prev' | 'history-next' | 'complete';

export interface EditResult {
  state: EditorState;
  action?: EditorAction;
  /** The key was not an editing key (the app may handle it). */
  unhandled?: boolean;
  /** A paste of this many characters was refused: the prompt would be too long (paste.ts). */
  refused?: number;
}

export const EMPTY: EditorState = { value: '', cursor: 0 };

export function editKey(state: EditorState, input: string, key: EditorKey): EditResult {
  if (key.paste) return insertPaste(state, input, true)!;
  const placeholder = (key.backspace || key.delete) && state.pastes?.find((p) => endsAt(state, p.label));
  if (placeholder) {
    // Backspace after a paste's placeholder takes the whole paste out.
    const start = state.cursor - placeholder.label.length;
    const value = state.value.slice(0, start) + state.value.slice(state.cursor);
    return { state: { value, cursor: start, pastes: state.pastes!.filter((p) => p !== placeholder) } };
  }
  const result = editText(state, input, key);
  // The pastes stay with the text (each key below makes a state of its own).
  if (state.pastes && !result.state.pastes) result.state = { ...result.state, pastes: state.pastes };
  return result;
}

const endsAt = (state: EditorState, text: string) =>
  state.cursor >= text.length && state.value.slice(state.cursor - text.length, state.cursor) === text;

function editText(state: EditorState, input: string, key: Key): EditResult {
  const { value, cursor } = state;
  const lineStart = value.lastIndexOf('\n', cursor - 1) + 1;
  const nextBreak = value.indexOf('\n', cursor);
  const lineEnd = nextBreak === -1 ? value.length : nextBreak;
  const insert = (text: string): EditResult => ({
    state: { value: value.slice(0, cursor) + text + value.slice(cursor), cursor: cursor + text.length },
  });

  // ctrl+enter: kitty keyboard protocol reports it; terminals without it may send LF (ctrl+j).
  if ((key.return && key.ctrl) || (input === '\n' && !key.return)) return { state, action: 'queue' };
  if (key.return && (key.shift || key.meta)) return insert('\n');
  if (key.return) {
    if (cursor > 0 && value[cursor - 1] === '\\') {
      return { state: { value: `${value.slice(0, cursor - 1)}\n${value.slice(cursor)}`, cursor } };
    }
    return { state, action: 'submit' };
  }
  if (key.tab && value.startsWith('/') && !value.includes(' ')) return { state, action: 'complete' };
  // Most terminals send DEL (0x7f) for Backspace, which Ink reports as `delete`.
  if (key.backspace || key.delete) {
    if (cursor === 0) return { state };
    return { state: { value: value.slice(0, cursor - 1) + value.slice(cursor), cursor: cursor - 1 } };
  }
  if (key.leftArrow) return { state: { value, cursor: Math.max(0, cursor - 1) } };
  if (key.rightArrow) return { state: { value, cursor: Math.min(value.length, cursor + 1) } };
  if (key.upArrow) {
    if (lineStart === 0) return { state, action: 'history-prev' };
    const column = cursor - lineStart;
    const prevStart = value.lastIndexOf('\n', lineStart - 2) + 1;
    return { state: { value, cursor: Math.min(prevStart + column, lineStart - 1) } };
  }
  if (key.downArrow) {
    if (lineEnd === value.length) return { state, action: 'history-next' };
    const column = cursor - lineStart;
    const nextEnd = value.indexOf('\n', lineEnd + 1);
    return {
      state: { value, cursor: Math.min(lineEnd + 1 + column, nextEnd === -1 ? value.length : nextEnd) },
    };
  }
  if (key.home || (key.ctrl && input === 'a')) return { state: { value, cursor: lineStart } };
  if (key.end || (key.ctrl && input === 'e')) return { state: { value, cursor: lineEnd } };
  if (key.ctrl && input === 'u')
    return { state: { value: value.slice(0, lineStart) + value.slice(cursor), cursor: lineStart } };
  if (key.ctrl && input === 'k')
    return { state: { value: value.slice(0, cursor) + value.slice(lineEnd), cursor } };
  if (key.ctrl && input === 'd') {
    if (cursor >= value.length) return { state };
    return { state: { value: value.slice(0, cursor) + value.slice(cursor + 1), cursor } };
  }
  if (key.ctrl && input === 'w') {
    const before = value.slice(0, cursor).replace(/\s*\S+\s*$/, '');
    return { state: { value: before + value.slice(cursor), cursor: before.length } };
  }
  if (key.ctrl || key.escape || key.pageUp || key.pageDown) return { state, unhandled: true };
  if (key.meta && input.length === 1) return { state, unhandled: true };
  if (!input || input.includes('\x1b')) return { state, unhandled: true };
  // A chunk of a paste too big to type in as it is (or the rest of one) goes beside the text.
  if (input.length > 1) {
    const pasted = insertPaste(state, input, false);
    if (pasted) return pasted;
  }
  // Keys typed faster than the terminal is read (tmux send-keys, a fast typist) arrive as one
  // chunk: a single line ending in CR is that line plus enter.
  if (input.length > 1 && /^[^\r\n]*[\r\n]$/.test(input)) {
    const action = input.endsWith('\r') ? 'submit' : 'queue';
    return { state: insert(input.slice(0, -1).replace(/\t/g, '')).state, action };
  }
  // A paste arrives as one string; terminals send CR for line breaks.
  return insert(input.replace(/\r\n?/g, '\n'));
}

/** Prompt history: ↑ walks back from the newest, ↓ forward, and past the newest restores the draft. */
export interface History {
  entries: string[];
  /** entries.length when not browsing. */
  index: number;
  draft: string;
}

export function historyStep(
  history: History,
  current: string,
  direction: -1 | 1,
): { history: History; value?: string } {
  const { entries } = history;
  if (!entries.length) return { history };
  const draft = history.index === entries.length ? current : history.draft;
  const index = Math.max(0, Math.min(entries.length, history.index + direction));
  if (index === history.index) return { history };
  return { history: { entries, index, draft }, value: index === entries.length ? draft : entries[index] };
}

export function historyPush(history: History, entry: string, max = 500): History {
  const entries = [...history.entries.filter((e) => e !== entry), entry].slice(-max);
  return { entries, index: entries.length, draft: '' };
}
