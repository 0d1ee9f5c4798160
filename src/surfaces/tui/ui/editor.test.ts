import type { Key } from 'ink';
import { describe, expect, it } from 'vitest';
import { type EditorState, EMPTY, editKey, historyPush, historyStep } from './editor';

const key = (patch: Partial<Key> = {}): Key =>
  ({
    upArrow: false,
    downArrow: false,
    leftArrow: false,
    rightArrow: false,
    pageDown: false,
    pageUp: false,
    home: false,
    end: false,
    return: false,
    escape: false,
    ctrl: false,
    shift: false,
    tab: false,
    backspace: false,
    delete: false,
    meta: false,
    super: false,
    hyper: false,
    capsLock: false,
    numLock: false,
    ...patch,
  }) as Key;

function type(state: EditorState, text: string): EditorState {
  return editKey(state, text, key()).state;
}

describe('prompt editor', () => {
  it('edits multi-line text: alt+enter and a trailing backslash add lines, enter submits', () => {
    let s = type(EMPTY, 'first');
    s = editKey(s, '\r', key({ return: true, meta: true })).state;
    s = type(s, 'second\\');
    s = editKey(s, '\r', key({ return: true })).state;
    s = type(s, 'third');
    expect(s.value).toBe('first\nsecond\nthird');
    expect(editKey(s, '\r', key({ return: true })).action).toBe('submit');
    expect(editKey(s, '\r', key({ return: true, ctrl: true })).action).toBe('queue');
    expect(editKey(s, '\n', key()).action).toBe('queue');
  });

  it('moves by line and hands ↑ on the first line to history', () => {
    const s = { value: 'ab\ncd', cursor: 5 };
    const up = editKey(s, '', key({ upArrow: true }));
    expect(up.state.cursor).toBe(2);
    expect(editKey(up.state, '', key({ upArrow: true })).action).toBe('history-prev');
    expect(editKey(s, '', key({ downArrow: true })).action).toBe('history-next');
    expect(editKey(s, '\x7f', key({ delete: true })).state).toEqual({ value: 'ab\nc', cursor: 4 });
    expect(editKey(s, 'u', key({ ctrl: true })).state).toEqual({ value: 'ab\n', cursor: 3 });
  });

  it('treats a typed line that arrives with its enter in one chunk as a submit, and keeps pastes', () => {
    expect(editKey(EMPTY, 'hello\r', key())).toEqual({
      state: { value: 'hello', cursor: 5 },
      action: 'submit',
    });
    expect(editKey(EMPTY, 'a\rb\r', key()).state.value).toBe('a\nb\n');
  });

  it('walks history and restores the draft', () => {
    let h = historyPush(historyPush({ entries: [], index: 0, draft: '' }, 'one'), 'two');
    const back = historyStep(h, 'draft', -1);
    expect(back.value).toBe('two');
    h = back.history;
    const back2 = historyStep(h, 'two', -1);
    expect(back2.value).toBe('one');
    const fwd = historyStep(historyStep(back2.history, 'one', 1).history, 'two', 1);
    expect(fwd.value).toBe('draft');
  });
});
