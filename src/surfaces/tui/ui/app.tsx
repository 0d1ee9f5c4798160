/**
 * The terminal UI root. Settled transcript items are printed once (Ink <Static>, so the
 * terminal's own scrollback and selection work and long sessions cost nothing per frame); the
 * live part (streaming text, running tools), the prompt and the status line are redrawn, clipped
 * to the screen height. Dialogs replace the live part while open.
 * @module
 */
import { Box, Static, useApp } from 'ink';
import { useCallback, useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import { matchCommands } from '../commands';
import type { ChatController } from '../state/chat-controller';
import { settledCount } from '../state/transcript';
import { type Dialog, useDialog, useOnboarding } from './dialog-state';
import { DialogView } from './dialog-view';
import { PermissionDialog } from './dialogs/permission-dialog';
import { InputBox, promptLines } from './input-box';
import { KeyInputRoot } from './key-input';
import { StatusLine } from './status-line';
import { ItemView } from './transcript-view';
import { type PromptHistoryStore, usePromptEditor } from './use-prompt-editor';
import { usePromptKeys } from './use-prompt-keys';
import { useScreen } from './use-screen';
import { useSlashCommands } from './use-slash-commands';

export type { Dialog } from './dialog-state';
export type { PromptHistoryStore } from './use-prompt-editor';

export interface TuiAppProps {
  controller: ChatController;
  history?: PromptHistoryStore;
  /** Check provider readiness at start and open onboarding when none is ready. */
  onboarding?: boolean;
  /** Run an external command in this terminal (OAuth bootstrap); local TUI only. */
  runExternal?: (command: string) => Promise<void>;
  /** Permission dialog arm delay (tests use 0). */
  armDelayMs?: number;
  initialDialog?: Dialog;
  /**
   * Clear the terminal (screen and scrollback) on a session switch or a width change, so the
   * transcript is printed again from the top. Off in component tests.
   */
  clearOnRedraw?: boolean;
}

/** The chat screen under the one key subscription (./key-input.tsx). */
export function TuiApp(props: TuiAppProps) {
  return (
    <KeyInputRoot>
      <ChatScreen {...props} />
    </KeyInputRoot>
  );
}

function ChatScreen(props: TuiAppProps) {
  const { controller } = props;
  const { exit } = useApp();
  const [store, setStore] = useState(() => controller.store());
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const prompt = usePromptEditor(props.history);
  const { editor } = prompt;
  const { dialog, dialogRef, setDialog } = useDialog(props.initialDialog);
  const [showReasoning, setShowReasoning] = useState(false);

  useEffect(() => controller.onSwitch(() => setStore(controller.store())), [controller]);
  const { size, epoch, reprint } = useScreen(store, props.clearOnRedraw);
  useSandboxNotice(controller);
  useOnboarding(controller, props.onboarding, setDialog);

  const sessionId = state.sessionId || undefined;
  const commands = useSlashCommands({ controller, sessionId, setDialog, exit });
  const permission = state.permissions[0];
  const toggleReasoning = useCallback(() => {
    setShowReasoning((v) => !v);
    reprint();
  }, [reprint]);
  usePromptKeys({
    controller,
    store,
    runState: state.state,
    modal: Boolean(dialog) || Boolean(permission),
    dialogRef,
    setDialog,
    prompt,
    runCommand: commands.runCommand,
    toggleReasoning,
    exit,
  });

  const settled = settledCount(state.items);
  const staticItems = useMemo(() => state.items.slice(0, settled), [state.items, settled]);
  const live = state.items.slice(settled);
  const inputRows = promptLines(editor.value, 6);
  const suggestions =
    editor.value.startsWith('/') && !editor.value.includes(' ')
      ? matchCommands(editor.value).slice(0, 4)
      : [];
  const hint = suggestions.length
    ? suggestions.map((c) => `/${c.name}`).join('  ') + '  (tab completes)'
    : undefined;
  const liveBudget = Math.max(3, size.rows - inputRows - 5);
  const dialogHeight = Math.max(6, size.rows - 3);

  return (
    <Box flexDirection="column" width={size.columns}>
      <Static key={epoch} items={staticItems}>
        {(item) => (
          <ItemView
            key={item.key}
            item={item}
            showReasoning={showReasoning}
            diffLines={40}
            width={size.columns}
          />
        )}
      </Static>
      {permission ? (
        <PermissionDialog
          request={permission}
          waiting={state.permissions.length - 1}
          height={dialogHeight}
          armDelayMs={props.armDelayMs}
          onDecision={(decision) => void controller.answer(permission.request_id, decision)}
        />
      ) : dialog ? (
        <DialogView
          dialog={dialog}
          height={dialogHeight}
          controller={controller}
          sessionId={sessionId}
          model={state.model}
          lastFailure={state.lastFailure}
          setDialog={setDialog}
          setEditor={prompt.setEditor}
          commands={commands}
          runExternal={props.runExternal}
        />
      ) : (
        <Box flexDirection="column">
          {live.map((item) => (
            <ItemView
              key={item.key}
              item={item}
              showReasoning={showReasoning}
              maxLines={Math.max(2, Math.floor(liveBudget / Math.max(1, live.length)))}
              diffLines={Math.max(2, Math.floor(liveBudget / 2))}
              width={size.columns}
            />
          ))}
          <InputBox editor={editor} maxRows={inputRows} busy={state.state !== 'idle'} hint={hint} />
        </Box>
      )}
      <StatusLine state={state} target={controller.client.info().target} width={size.columns} />
    </Box>
  );
}

/** issue 15: said once, when commands run without the OS sandbox (auto mode, no bubblewrap). */
function useSandboxNotice(controller: ChatController): void {
  useEffect(() => {
    controller.client.callTool('sandbox_status', {}).then(
      (result) => {
        const notice = (result.value as { notice?: string | null } | undefined)?.notice;
        if (notice) controller.notice('warn', notice);
      },
      () => {}, // an older server without the tool: nothing to say
    );
  }, [controller]);
}
