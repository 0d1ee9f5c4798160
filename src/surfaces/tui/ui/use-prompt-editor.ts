/**
 * The prompt being typed and the prompt history (up/down), kept in refs as well as state: keys can
 * arrive faster than React renders (a fast typist, a paste followed by enter, tmux send-keys), so
 * the input handlers read and write the refs and a key never sees the state of the render before
 * the previous key. The state copy drives rendering.
 * @module
 */
import { type MutableRefObject, useCallback, useRef, useState } from 'react';
import { type EditorState, EMPTY, type History, historyPush, historyStep } from './editor';
import { expandPastes, promptState } from './paste';

export interface PromptHistoryStore {
  load(): string[];
  append(entry: string): void;
}

export interface PromptEditor {
  editor: EditorState;
  editorRef: MutableRefObject<EditorState>;
  setEditor(next: EditorState): void;
  /** Add a submitted prompt to the history (and its store). */
  remember(entry: string): void;
  /** Step through the history: -1 older, 1 newer. */
  step(direction: -1 | 1): void;
}

export function usePromptEditor(history: PromptHistoryStore | undefined): PromptEditor {
  const [editor, setEditorState] = useState<EditorState>(EMPTY);
  const editorRef = useRef<EditorState>(EMPTY);
  const setEditor = useCallback((next: EditorState) => {
    editorRef.current = next;
    setEditorState(next);
  }, []);
  const historyRef = useRef<History | undefined>(undefined);
  if (!historyRef.current) {
    const entries = history?.load() ?? [];
    historyRef.current = { entries, index: entries.length, draft: '' };
  }
  const remember = useCallback(
    (entry: string) => {
      historyRef.current = historyPush(historyRef.current!, entry);
      history?.append(entry);
    },
    [history],
  );
  const step = useCallback(
    (direction: -1 | 1) => {
      const next = historyStep(historyRef.current!, expandPastes(editorRef.current), direction);
      historyRef.current = next.history;
      if (next.value !== undefined) setEditor(promptState(EMPTY, next.value));
    },
    [setEditor],
  );
  return { editor, editorRef, setEditor, remember, step };
}
