/**
 * Which of Ink's raw input events (one per key, escape sequence or text run, as Ink's input
 * parser splits what stdin gave) reach Ink's key listeners (key-input.tsx wires it in front of
 * them). Any bytes may come: a person pastes colored output, a terminal answers a query, a key
 * has no name.
 *
 * - A bracketed paste (`ESC [200~` … `ESC [201~`) is collected here and handed on whole, as one
 *   `ESC [201~` event whose text `takePaste()` gives, with its escape sequences and control
 *   characters removed (`safeTerminalText`): the text of colored output, not its colors. A paste
 *   whose end marker never comes (a terminal that drops it) ends after `PASTE_IDLE_MS` with no
 *   data, so later keys are not swallowed. A paste is held up to `MAX_PROMPT_CHARS` (paste.ts) as
 *   it arrives: past that it is handed on at once as too big (no text), and the rest of it is
 *   dropped until its end marker (or the idle time), so an endless paste holds bounded memory.
 * - A terminal string outside a paste is dropped whole, across events and reads: OSC (`ESC ]` …
 *   BEL or ST: a window title, a hyperlink, a color answer), DCS (`ESC P`: an XTGETTCAP or DECRQSS
 *   answer), APC (`ESC _`: a kitty graphics answer), PM (`ESC ^`) and SOS (`ESC X`), ST being
 *   `ESC \` or 0x9c; and their one-character C1 forms (0x9d, 0x90, 0x9f, 0x9e, 0x98), which Ink
 *   hands on inside typed text. BEL ends an OSC string only. One whose end never comes ends after
 *   `MAX_STRING_CHARS` characters, at another escape sequence, or after `PASTE_IDLE_MS` with no
 *   data: the input after it is typed again. (Ink hands `ESC ]`, `ESC P`, `ESC _`, `ESC ^` and
 *   `ESC X` on as alt+], alt+P, alt+_, alt+^ and alt+X, the string's text as typed text.) So
 *   those five are no keys: they start a string.
 * - Text typed (or pasted without brackets) loses its control characters but CR, LF and tab,
 *   and shows bidi controls, as a paste's text does; a control character alone is a key.
 * - Outside a paste, an escape sequence Ink names no key for (SGR `ESC [31m`, a cursor position
 *   report, a device attributes answer) is dropped. Ink's key parser threw on some of them (a
 *   parameter it reads as ctrl and no key name: `useInput` called `.startsWith` on undefined),
 *   which stopped the TUI, and typed the rest into the prompt as text (`[12;40R`).
 * @module
 */
import { safeTerminalText } from '../../../util/terminal-text';
import { MAX_PROMPT_CHARS } from './paste';

export const PASTE_START = '\x1b[200~';
export const PASTE_END = '\x1b[201~';
/** A paste (or an OSC string) with no data for this long ends as if its end marker came. */
export const PASTE_IDLE_MS = 1000;
/** The longest terminal string (OSC, DCS, APC, PM, SOS) dropped as one: past it, the input is typed again. */
export const MAX_STRING_CHARS = 8192;
const OSC_START = '\x1b]';
/** The events Ink hands on for a string's start: OSC, DCS, APC, PM, SOS (as alt+], alt+P, …). */
const STRING_STARTS = new Set([OSC_START, '\x1bP', '\x1b_', '\x1b^', '\x1bX']);
/** Their C1 forms, one character each, inside a text event. */
const C1_STRING_START = /[\x9d\x90\x9f\x9e\x98]/;
const C1_OSC = '\x9d';
const ST = '\x1b\\';
const C1_ST = '\x9c';

export interface FilterTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: FilterTimers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** A paste the event just handed on ends. */
export interface EndedPaste {
  /** Its text, cleaned; empty when it was too big. */
  text: string;
  /** It went past `MAX_PROMPT_CHARS` as it arrived: its text is gone, the rest of it is dropped. */
  tooBig?: boolean;
}

export interface InputFilter {
  /** The event to hand Ink's key listeners for raw event `input`; undefined: none. */
  filter(input: string): string | undefined;
  /** The paste the event just handed on ends (once for that event); else undefined. */
  takePaste(): EndedPaste | undefined;
  dispose(): void;
}

/**
 * What the filter is in: typed keys; a paste held; the rest of a paste too big, dropped; a
 * terminal string dropped (`esc`: its last event was a lone ESC, maybe the start of its `ESC \`
 * end; `bel`: BEL ends it, an OSC string).
 */
type Mode =
  | { kind: 'keys' }
  | { kind: 'paste'; parts: string[]; size: number }
  | { kind: 'dropping' }
  | StringMode;
type StringMode = { kind: 'string'; size: number; esc: boolean; bel: boolean };

const KEYS: Mode = { kind: 'keys' };

/**
 * @param endPaste called when an open paste has had no data for `idleMs`: hand `PASTE_END` to
 *   the filter and the listeners (key-input.tsx emits it as Ink would).
 * @param maxPaste the most characters of a paste held (tests make it small).
 */
export function createInputFilter(
  endPaste: () => void,
  timers: FilterTimers = realTimers,
  idleMs = PASTE_IDLE_MS,
  maxPaste = MAX_PROMPT_CHARS,
): InputFilter {
  let mode: Mode = KEYS;
  let ended: EndedPaste | undefined;
  let timer: unknown;
  const stopTimer = () => {
    if (timer !== undefined) timers.clear(timer);
    timer = undefined;
  };
  const enter = (next: Mode) => {
    mode = next;
    if (next.kind === 'keys') return stopTimer();
    stopTimer();
    timer = timers.set(() => {
      timer = undefined;
      if (mode.kind === 'paste') endPaste();
      else mode = KEYS;
    }, idleMs);
  };

  const inPaste = (input: string, paste: Mode & { kind: 'paste' | 'dropping' }) => {
    if (input === PASTE_END) {
      enter(KEYS);
      if (paste.kind === 'dropping') return undefined;
      ended = { text: safeTerminalText(paste.parts.join('')) };
      return PASTE_END;
    }
    if (paste.kind === 'dropping') return void enter(paste);
    paste.size += input.length;
    if (paste.size <= maxPaste) {
      paste.parts.push(input);
      return void enter(paste);
    }
    // Too big: what was held goes now, and the user hears of it now, not at an end that may never come.
    enter({ kind: 'dropping' });
    ended = { text: '', tooBig: true };
    return PASTE_END;
  };

  /** The part of event `input` after the open string `str` (all of it, or nothing, is the string). */
  const inString = (input: string, str: StringMode): string | undefined => {
    if (str.esc && input[0] === '\\') {
      enter(KEYS);
      return input.slice(1) || undefined;
    }
    if (input === '\x1b') return void enter({ ...str, esc: true });
    if (input[0] === '\x1b' || str.esc) {
      // Another escape sequence (or ST) ends the string; ST is part of it.
      enter(KEYS);
      return input === ST ? undefined : input;
    }
    return stringText(input, str);
  };

  /** The part of text `input` after the open string `str` ends (BEL for OSC, C1 ST), or at its longest. */
  const stringText = (input: string, str: StringMode): string | undefined => {
    const st = input.indexOf(C1_ST);
    const bel = str.bel ? input.indexOf('\x07') : -1;
    const end = st === -1 || (bel !== -1 && bel < st) ? bel : st;
    const room = MAX_STRING_CHARS - str.size;
    if (end !== -1 && end <= room) {
      enter(KEYS);
      return input.slice(end + 1) || undefined;
    }
    if (input.length <= room) return void enter({ ...str, size: str.size + input.length });
    // Never ended: it is dropped, and what comes past its longest is typed.
    enter(KEYS);
    return input.slice(room);
  };

  /** Text typed outside a string without the C1 strings in it (one left open stays open). */
  const withoutC1Strings = (input: string): string => {
    let kept = '';
    let rest: string | undefined = input;
    while (rest !== undefined) {
      const start = rest.search(C1_STRING_START);
      if (start === -1) return kept + rest;
      kept += rest.slice(0, start);
      const str: StringMode = { kind: 'string', size: 0, esc: false, bel: rest[start] === C1_OSC };
      enter(str);
      rest = stringText(rest.slice(start + 1), str);
    }
    return kept;
  };

  return {
    filter(input) {
      ended = undefined;
      if (mode.kind === 'paste' || mode.kind === 'dropping') return inPaste(input, mode);
      let rest: string | undefined = input;
      if (mode.kind === 'string') rest = inString(input, mode);
      if (rest === undefined) return undefined;
      if (rest === PASTE_START) return void enter({ kind: 'paste', parts: [], size: 0 });
      if (STRING_STARTS.has(rest))
        return void enter({ kind: 'string', size: 0, esc: false, bel: rest === OSC_START });
      if (!isKey(rest)) return undefined;
      return rest[0] === '\x1b' ? rest : typedText(withoutC1Strings(rest));
    },
    takePaste() {
      const paste = ended;
      ended = undefined;
      return paste;
    },
    dispose: stopTimer,
  };
}

/**
 * A text event made safe to show: a control character alone is a key (ctrl+c, enter, tab,
 * backspace) and stays; in text typed faster than it is read, or pasted without brackets,
 * control characters other than CR, LF and tab go and bidi controls are shown (safeTerminalText),
 * as in a bracketed paste. Undefined when nothing is left.
 */
function typedText(input: string): string | undefined {
  if (input.length === 1 && (input < ' ' || input === '\x7f')) return input;
  const text = input.split('\r').map(safeTerminalText).join('\r');
  return text || undefined;
}

// Ink's legacy key parser (ink/build/parse-keypress.js `fnKeyRe` and `keyName`): a sequence it
// matches names a key only when its code is one of these.
const FN_KEY = /^\x1b+(O|N|\[|\[\[)(?:(\d+)(?:;(\d+))?([~^$])|(?:1;)?(\d+)?([a-zA-Z]))/;
const KEY_CODES = new Set([
  ...['OP', 'OQ', 'OR', 'OS', 'OA', 'OB', 'OC', 'OD', 'OE', 'OF', 'OH', 'Oa', 'Ob', 'Oc', 'Od', 'Oe'],
  ...['[A', '[B', '[C', '[D', '[E', '[F', '[H', '[Z', '[a', '[b', '[c', '[d', '[e'],
  ...['[[A', '[[B', '[[C', '[[D', '[[E', '[[5~', '[[6~'],
  ...[1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 23, 24].map((n) => `[${n}~`),
  ...[2, 3, 5, 6, 7, 8].flatMap((n) => [`[${n}$`, `[${n}^`]),
]);
// The kitty keyboard protocol's keys (ink/build/parse-keypress.js `kittyKeyRe`, `kittySpecialKeyRe`).
const KITTY_KEY = /^\x1b\[\d+(?:;\d+(?::\d+)?(?:;[\d:]+)?)?u$/;
const KITTY_SPECIAL = /^\x1b\[(\d+);\d+:\d+([A-Za-z~])$/;
const KITTY_LETTERS = 'ABCDEFHPQRS';
const KITTY_NUMBERS = new Set([2, 3, 5, 6, 7, 8, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 23, 24]);
/** ESC and one character (a printable one, enter, backspace): that key with alt. */
const ALT_KEY = /^\x1b(?:[^\x00-\x1f\x7f-\x9f]|[\r\b\x7f])$/u;

/** Whether Ink names a key for `input` (text always is one). */
export function isKey(input: string): boolean {
  if (input[0] !== '\x1b') return true;
  if (input === '\x1b' || input === '\x1b\x1b' || KITTY_KEY.test(input)) return true;
  const special = KITTY_SPECIAL.exec(input);
  if (special)
    return special[2] === '~' ? KITTY_NUMBERS.has(Number(special[1])) : KITTY_LETTERS.includes(special[2]);
  const fn = FN_KEY.exec(input);
  if (fn) return KEY_CODES.has([fn[1], fn[2], fn[4], fn[6]].filter(Boolean).join(''));
  return ALT_KEY.test(input);
}
