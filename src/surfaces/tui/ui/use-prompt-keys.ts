/**
 * The keys of the chat screen. ctrl+c works everywhere: closes a dialog, clears the prompt,
 * cancels, or (twice) quits. The rest go to the prompt editor while no dialog or permission
 * request owns the keys: esc cancels the run, ctrl+p/s/n/o open the palette, the sessions, a new
 * session, toggle reasoning; enter sends, ctrl+enter queues, up/down walk the history, tab
 * completes a slash command.
 * @module
 */
import { type MutableRefObject, useCallback, useRef } from 'react';
import { COMMANDS, matchCommands, type ParsedCommand, parseCommand } from '../commands';
import type { ChatController } from '../state/chat-controller';
import type { TranscriptStore } from '../state/store';
import type { RunState } from '../state/transcript';
import type { Dialog, DialogSetter } from './dialog-state';
import { type EditorKey, EMPTY, editKey } from './editor';
import { expandPastes, refusedText, tooBigText } from './paste';
import { useLatestInput } from './use-latest-input';
import type { PromptEditor } from './use-prompt-editor';

export interface PromptKeysOptions {
  controller: ChatController;
  store: TranscriptStore;
  /** The run state of this render. */
  runState: RunState;
  /** A dialog or a permission request is open: the prompt does not take keys. */
  modal: boolean;
  dialogRef: MutableRefObject<Dialog | undefined>;
  setDialog: DialogSetter;
  prompt: PromptEditor;
  runCommand(parsed: ParsedCommand): void;
  toggleReasoning(): void;
  exit(): void;
}

export function usePromptKeys(options: PromptKeysOptions): void {
  const { controller, store, runState, dialogRef, setDialog, prompt, runCommand, exit } = options;
  const { editorRef, setEditor } = prompt;
  const lastCtrlC = useRef(0);

  const submit = useCallback(
    (text: string, queue: boolean) => {
      const trimmed = text.trim();
      if (!trimmed) return;
      prompt.remember(trimmed);
      setEditor(EMPTY);
      const parsed = parseCommand(trimmed);
      if (parsed) return runCommand(parsed);
      if (/^\/[A-Za-z0-9_-]+(\s|$)/.test(trimmed)) {
        return controller.notice(
          'warn',
          `unknown command ${trimmed.split(/\s/)[0]} (see /help; start with a space to send it as a prompt)`,
        );
      }
      void (queue ? controller.enqueue(text) : controller.send(text));
    },
    [controller, runCommand, prompt.remember, setEditor],
  );

  // Both handlers see the run state and the modal flag of the render on screen: ctrl+c on the
  // first frame that shows a run running cancels it (use-latest-input.ts).
  useLatestInput((input, key: EditorKey) => {
    // Said whatever owns the keys: a dialog that takes text drops the paste as well.
    if (key.pasteTooBig) return controller.notice('warn', tooBigText());
    if (!(key.ctrl && input === 'c')) return;
    if (dialogRef.current) return setDialog(undefined);
    if (editorRef.current.value) return setEditor(EMPTY);
    if (runState === 'running') return void controller.cancel();
    const now = Date.now();
    if (now - lastCtrlC.current < 1500) return exit();
    lastCtrlC.current = now;
    controller.notice('info', 'press ctrl+c again to quit');
  });

  useLatestInput(
    (input, key) => {
      if ((key.ctrl && input === 'c') || (key as EditorKey).pasteTooBig) return;
      // A dialog opened by an earlier key of the same burst owns the keys from now on.
      if (dialogRef.current || store.getSnapshot().permissions.length) return;
      const editor = editorRef.current;
      if (key.escape) {
        if (runState === 'running' || runState === 'compacting') void controller.cancel();
        return;
      }
      if (key.ctrl && input === 'p') return setDialog({ kind: 'palette' });
      if (key.ctrl && input === 's') return setDialog({ kind: 'sessions' });
      if (key.ctrl && input === 'n')
        return runCommand({ command: COMMANDS.find((c) => c.name === 'new')!, args: '' });
      // Printed items are not redrawn by Ink: print the transcript again with the new setting.
      if (key.ctrl && input === 'o') return options.toggleReasoning();
      const result = editKey(editor, input, key);
      if (result.refused) controller.notice('warn', refusedText(result.refused));
      switch (result.action) {
        case 'submit':
          return submit(expandPastes(result.state), false);
        case 'queue':
          return submit(expandPastes(result.state), true);
        case 'history-prev':
        case 'history-next':
          return prompt.step(result.action === 'history-prev' ? -1 : 1);
        case 'complete': {
          const match = matchCommands(editor.value)[0];
          if (match) setEditor({ value: `/${match.name} `, cursor: match.name.length + 2 });
          return;
        }
        default:
          if (!result.unhandled) setEditor(result.state);
      }
    },
    { isActive: !options.modal },
  );
}
