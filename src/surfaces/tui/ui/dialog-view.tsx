/**
 * The dialogs that replace the live part of the screen while open (help, palette, sessions,
 * model, providers, onboarding, readouts, dashboard, pack, undo): which one is open (`useDialog`,
 * kept in a ref too so a key of the same burst sees it), the onboarding check at start, and the
 * view of the open one.
 * @module
 */
import { type MutableRefObject, useCallback, useEffect, useRef, useState } from 'react';
import { COMMANDS, type ParsedCommand, type SlashCommand } from '../commands';
import type { ChatController } from '../state/chat-controller';
import { CommandPalette } from './dialogs/command-palette';
import { DashboardView } from './dialogs/dashboard-view';
import { HelpView } from './dialogs/help-view';
import { ModelPicker } from './dialogs/model-picker';
import { Onboarding } from './dialogs/onboarding';
import { PackPicker } from './dialogs/pack-picker';
import { ProvidersDialog } from './dialogs/providers-dialog';
import { ReadoutView } from './dialogs/readout-view';
import { SessionList } from './dialogs/session-list';
import { UndoDialog } from './dialogs/undo-dialog';
import type { EditorState } from './editor';
import type { SlashCommands } from './use-slash-commands';

export type Dialog =
  | { kind: 'help' }
  | { kind: 'palette' }
  | { kind: 'sessions' }
  | { kind: 'model' }
  | { kind: 'providers' }
  | { kind: 'onboarding' }
  | { kind: 'readout'; command: SlashCommand; args: string }
  | { kind: 'dashboard' }
  | { kind: 'pack' }
  | { kind: 'undo' };

export type DialogSetter = (
  next: Dialog | undefined | ((current: Dialog | undefined) => Dialog | undefined),
) => void;

export function useDialog(initial: Dialog | undefined): {
  dialog: Dialog | undefined;
  dialogRef: MutableRefObject<Dialog | undefined>;
  setDialog: DialogSetter;
} {
  const [dialog, setDialogState] = useState<Dialog | undefined>(initial);
  const dialogRef = useRef<Dialog | undefined>(initial);
  const setDialog = useCallback<DialogSetter>((next) => {
    const value = typeof next === 'function' ? next(dialogRef.current) : next;
    dialogRef.current = value;
    setDialogState(value);
  }, []);
  return { dialog, dialogRef, setDialog };
}

/** Check provider readiness at start and open onboarding when none is ready. */
export function useOnboarding(
  controller: ChatController,
  enabled: boolean | undefined,
  setDialog: DialogSetter,
) {
  useEffect(() => {
    if (!enabled) return;
    const client = controller.client;
    client.providerStatus().then(
      async (rows) => {
        if (rows.some((r) => r.ready)) return;
        // A local model server on loopback needs no setup: svc run and the TUI use it as is.
        if (await client.localModel?.().catch(() => undefined)) return;
        setDialog((d) => d ?? { kind: 'onboarding' });
      },
      () => setDialog((d) => d ?? { kind: 'onboarding' }),
    );
  }, [controller, enabled, setDialog]);
}

export interface DialogViewProps {
  dialog: Dialog;
  height: number;
  controller: ChatController;
  sessionId: string | undefined;
  /** The session's own model (the model picker marks it). */
  model: string | null;
  setDialog: DialogSetter;
  setEditor(next: EditorState): void;
  commands: SlashCommands;
  /** Run an external command in this terminal (OAuth bootstrap); local TUI only. */
  runExternal?: (command: string) => Promise<void>;
}

export function DialogView(props: DialogViewProps) {
  const { dialog: d, controller, sessionId, setDialog, commands } = props;
  const common = { height: props.height };
  const close = useCallback(() => setDialog(undefined), [setDialog]);
  const run = (parsed: ParsedCommand) => commands.runCommand(parsed);
  switch (d.kind) {
    case 'help':
      return <HelpView {...common} onClose={close} />;
    case 'palette':
      return (
        <CommandPalette
          {...common}
          onCancel={close}
          onRun={(command) => {
            setDialog(undefined);
            if (command.args && !command.args.startsWith('[')) {
              props.setEditor({ value: `/${command.name} `, cursor: command.name.length + 2 });
            } else run({ command, args: '' });
          }}
        />
      );
    case 'sessions':
      return (
        <SessionList
          {...common}
          client={controller.client}
          activeId={sessionId}
          onCancel={close}
          onOpen={(id) => {
            setDialog(undefined);
            void controller.open(id);
          }}
          onNew={() => {
            setDialog(undefined);
            void controller.open(undefined);
          }}
        />
      );
    case 'model':
      return (
        <ModelPicker
          {...common}
          client={controller.client}
          current={props.model}
          onCancel={close}
          onPick={(selector) => {
            setDialog(undefined);
            run({ command: COMMANDS.find((c) => c.name === 'model')!, args: selector });
          }}
        />
      );
    case 'providers': {
      const { runExternal } = props;
      return (
        <ProvidersDialog
          {...common}
          client={controller.client}
          onCancel={close}
          onRunAuth={
            runExternal
              ? (command) => {
                  setDialog(undefined);
                  void runExternal(command).then(() => setDialog({ kind: 'providers' }));
                }
              : undefined
          }
        />
      );
    }
    case 'onboarding':
      return (
        <Onboarding
          {...common}
          client={controller.client}
          onDone={() => {
            setDialog(undefined);
            void controller.refresh();
          }}
        />
      );
    case 'readout':
      return (
        <ReadoutView
          {...common}
          key={`${d.command.name}:${d.args}`}
          title={`/${d.command.name}${d.args ? ` ${d.args}` : ''} · ${d.command.description}`}
          load={(signal) => commands.callReadout(d.command, d.args, signal)}
          onClose={close}
        />
      );
    case 'dashboard':
      return <DashboardView {...common} client={controller.client} sessionId={sessionId} onClose={close} />;
    case 'pack':
      return <PackPicker {...common} client={controller.client} sessionId={sessionId} onClose={close} />;
    case 'undo':
      return (
        <UndoDialog
          {...common}
          client={controller.client}
          sessionId={sessionId}
          onClose={close}
          onRestored={(message) => {
            setDialog(undefined);
            controller.notice('info', message);
          }}
        />
      );
    default: {
      const never: never = d;
      return never;
    }
  }
}
