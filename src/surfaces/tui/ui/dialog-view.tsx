/**
 * The view of the open dialog, which replaces the live part of the screen while open (help,
 * palette, sessions, model, providers, onboarding, readouts, dashboard, pack, undo). Which one is
 * open is dialog-state.ts.
 * @module
 */
import { useCallback } from 'react';
import { COMMANDS, type ParsedCommand } from '../commands';
import type { ChatController } from '../state/chat-controller';
import type { TranscriptState } from '../state/transcript-types';
import type { Dialog, DialogSetter } from './dialog-state';
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
import { WhyView } from './dialogs/why-view';
import type { EditorState } from './editor';
import type { SlashCommands } from './use-slash-commands';

export interface DialogViewProps {
  dialog: Dialog;
  height: number;
  controller: ChatController;
  sessionId: string | undefined;
  /** The session's own model (the model picker marks it). */
  model: string | null;
  /** The latest classified failure of the transcript (what /why shows first). */
  lastFailure?: TranscriptState['lastFailure'];
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
          onDone={(saved) => {
            setDialog(undefined);
            if (saved) controller.notice(saved.includes(' is ready') ? 'info' : 'warn', saved);
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
    case 'why':
      return (
        <WhyView
          {...common}
          client={controller.client}
          seen={props.lastFailure}
          sessionId={sessionId}
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
