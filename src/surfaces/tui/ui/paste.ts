/**
 * Big pastes in the prompt. A paste longer than `COLLAPSE_CHARS` (or one that would make the
 * prompt longer than that) is kept beside the prompt and shown in it as one placeholder,
 * `[Pasted text #1 +120 lines]`, as other coding assistants do; the prompt sent is the text with
 * each placeholder replaced by its paste, whole. So the editor's own text stays small: a key or a
 * chunk of a paste costs the same at the end of a 10 MB paste as at its start (a 10 MB paste
 * inserted chunk by chunk into one string, re-split per frame, took minutes).
 *
 * A paste comes as one string when the terminal brackets it (key-input.tsx); without that it comes
 * in chunks as the terminal reads it, and a chunk right after an open placeholder (nothing typed in
 * between) is added to that paste. A paste that would make the prompt longer than
 * `MAX_PROMPT_CHARS` is refused whole (the caller says so).
 * @module
 */
import { safeTerminalText } from '../../../util/terminal-text';

/** A paste longer than this is shown as a placeholder. */
export const COLLAPSE_CHARS = 10_000;
/** The longest prompt a paste may make (4 MiB of text; more does not fit a model's context anyway). */
export const MAX_PROMPT_CHARS = 4 * 1024 * 1024;

export interface PastedText {
  id: number;
  /** The placeholder in the prompt's text. */
  label: string;
  text: string;
  /** Line breaks in `text`. */
  breaks: number;
}

/** The part of the editor state pastes need (editor.ts's EditorState has it). */
export interface PasteState {
  value: string;
  cursor: number;
  pastes?: readonly PastedText[];
  /** The paste a following chunk continues (while the cursor is right after its placeholder); -1: a refused one. */
  open?: number;
}

export interface PasteResult<S extends PasteState> {
  state: S;
  /** Characters of a paste refused because the prompt would be too long (first chunk of it only). */
  refused?: number;
}

const labelOf = (id: number, text: string, breaks: number) =>
  breaks > 0 ? `[Pasted text #${id} +${breaks} lines]` : `[Pasted text #${id} ${text.length} chars]`;

const breaksIn = (text: string) => {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
};

/** How long the prompt sent would be. */
export function promptLength(state: PasteState): number {
  let length = state.value.length;
  for (const p of state.pastes ?? []) length += p.text.length - p.label.length;
  return length;
}

/** The open paste a chunk typed now continues, if any. */
function openPaste(state: PasteState): PastedText | -1 | undefined {
  if (state.open === undefined || state.open === -1) return state.open;
  const paste = state.pastes?.find((p) => p.id === state.open);
  if (!paste || state.value.slice(state.cursor - paste.label.length, state.cursor) !== paste.label) return;
  return paste;
}

/**
 * `text` (a paste, or a chunk of typed or pasted text) inserted at the cursor the way big pastes
 * go; undefined when it is small enough to be typed in as it is (`bracketed` is false).
 */
export function insertPaste<S extends PasteState>(
  state: S,
  raw: string,
  bracketed: boolean,
): PasteResult<S> | undefined {
  // A bracketed paste is whole: it starts a paste of its own.
  const open = bracketed ? undefined : openPaste(state);
  const big = raw.length > COLLAPSE_CHARS || state.value.length + raw.length > COLLAPSE_CHARS;
  if (!bracketed && open === undefined && !big) return undefined;
  if (open === -1) return { state };
  const text = safeTerminalText(raw);
  if (promptLength(state) + text.length > MAX_PROMPT_CHARS) {
    if (bracketed) return { state, refused: text.length };
    return refuse(state, open, text.length);
  }
  if (open) {
    const breaks = open.breaks + breaksIn(text);
    const grown = { ...open, text: open.text + text, breaks, label: labelOf(open.id, '', breaks) };
    if (!breaks) grown.label = labelOf(open.id, grown.text, 0);
    const start = state.cursor - open.label.length;
    return {
      state: {
        ...state,
        value: state.value.slice(0, start) + grown.label + state.value.slice(state.cursor),
        cursor: start + grown.label.length,
        pastes: state.pastes!.map((p) => (p === open ? grown : p)),
      },
    };
  }
  if (!big) return { state: { ...state, ...insertAt(state, text), open: undefined } };
  const id = Math.max(0, ...(state.pastes ?? []).map((p) => p.id)) + 1;
  const breaks = breaksIn(text);
  const paste: PastedText = { id, text, breaks, label: labelOf(id, text, breaks) };
  return {
    state: {
      ...state,
      ...insertAt(state, paste.label),
      pastes: [...(state.pastes ?? []), paste],
      // A bracketed paste is whole; a chunk of one read without brackets may go on.
      open: bracketed ? undefined : id,
    },
  };
}

function insertAt(state: PasteState, text: string) {
  const { value, cursor } = state;
  return { value: value.slice(0, cursor) + text + value.slice(cursor), cursor: cursor + text.length };
}

/**
 * A chunk refused: the open paste it continued goes too, so no part of the paste stays, and the
 * chunks after it (until another key) are dropped.
 */
function refuse<S extends PasteState>(
  state: S,
  open: PastedText | undefined,
  length: number,
): PasteResult<S> {
  if (!open) return { state: { ...state, open: -1 }, refused: length };
  const start = state.cursor - open.label.length;
  return {
    state: {
      ...state,
      value: state.value.slice(0, start) + state.value.slice(state.cursor),
      cursor: start,
      pastes: state.pastes!.filter((p) => p !== open),
      open: -1,
    },
    refused: open.text.length + length,
  };
}

/** The prompt as it is sent: each placeholder replaced by its paste. */
export function expandPastes(state: PasteState): string {
  if (!state.pastes?.length) return state.value;
  const byLabel = new Map(state.pastes.map((p) => [p.label, p.text]));
  return state.value.replace(/\[Pasted text #\d+ [^\]\n]*\]/g, (label) => byLabel.get(label) ?? label);
}

/** An editor state for `text` (a prompt from the history): a big one collapsed as a paste is. */
export function promptState<S extends PasteState>(empty: S, text: string): S {
  if (text.length <= COLLAPSE_CHARS) return { ...empty, value: text, cursor: text.length };
  return insertPaste({ ...empty, open: undefined }, text, true)?.state ?? empty;
}

/** The notice for a bracketed paste that went past `MAX_PROMPT_CHARS` as it arrived (input-filter.ts). */
export function tooBigText(): string {
  const mib = `${(MAX_PROMPT_CHARS / 1024 / 1024).toFixed(1)} MiB`;
  return `paste of more than ${mib} not added, and the rest of it is dropped as it arrives: a prompt holds at most ${mib}; save the text to a file in the workspace and name the file in the prompt`;
}

/** The notice for a refused paste. */
export function refusedText(chars: number): string {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `paste of ${mib(chars)} not added: a prompt holds at most ${mib(MAX_PROMPT_CHARS)}; save the text to a file in the workspace and name the file in the prompt`;
}
