/**
 * The terminal UI root. Settled transcript items are printed once (Ink <Static>, so the
 * terminal's own scrollback and selection work and long sessions cost nothing per frame); the
 * live part (streaming text, running tools), the prompt and the status line are redrawn, clipped
 * to the screen height. Dialogs replace the live part while open.
 * @module
 */
import { Box, Static, useApp, useInput, useStdout } from 'ink';
import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { toSvcError } from '../../../errors';
import { isMissingTool, isUnavailable, type ToolResult } from '../client';
import { COMMANDS, matchCommands, type ParsedCommand, parseCommand, type SlashCommand } from '../commands';
import type { ChatController } from '../state/chat-controller';
import { settledCount } from '../state/transcript';
import { CommandPalette } from './dialogs/command-palette';
import { DashboardView } from './dialogs/dashboard-view';
import { HelpView } from './dialogs/help-view';
import { ModelPicker } from './dialogs/model-picker';
import { Onboarding } from './dialogs/onboarding';
import { PackPicker } from './dialogs/pack-picker';
import { PermissionDialog } from './dialogs/permission-dialog';
import { ProvidersDialog } from './dialogs/providers-dialog';
import { ReadoutView } from './dialogs/readout-view';
import { SessionList } from './dialogs/session-list';
import { UndoDialog } from './dialogs/undo-dialog';
import { WhyView } from './dialogs/why-view';
import { type EditorState, EMPTY, editKey, type History, historyPush, historyStep } from './editor';
import { InputBox } from './input-box';
import { StatusLine } from './status-line';
import { ItemView } from './transcript-view';

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
  | { kind: 'undo' }
  | { kind: 'why' };

export interface PromptHistoryStore {
  load(): string[];
  append(entry: string): void;
}

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

export function TuiApp(props: TuiAppProps) {
  const { controller } = props;
  const { exit } = useApp();
  const { stdout, write } = useStdout();
  const { clearOnRedraw } = props;
  // Through Ink's own writer: it erases its live output, writes this, and draws the live output
  // again, so the screen is never left blank (a raw write would leave Ink thinking it is shown).
  const clearScreen = useCallback(() => {
    if (clearOnRedraw) write('\x1b[2J\x1b[3J\x1b[H');
  }, [clearOnRedraw, write]);
  const mounted = useRef(false);
  const [size, setSize] = useState({ columns: stdout.columns || 80, rows: stdout.rows || 24 });
  const [store, setStore] = useState(() => controller.store());
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot);
  // Keys can arrive faster than React renders (a fast typist, a paste followed by enter, tmux
  // send-keys): the input handlers read and write these refs, so a key never sees the state of
  // the render before the previous key. The state copies drive rendering.
  const [editor, setEditorState] = useState<EditorState>(EMPTY);
  const editorRef = useRef<EditorState>(EMPTY);
  const setEditor = useCallback((next: EditorState) => {
    editorRef.current = next;
    setEditorState(next);
  }, []);
  const historyRef = useRef<History | undefined>(undefined);
  if (!historyRef.current) {
    const entries = props.history?.load() ?? [];
    historyRef.current = { entries, index: entries.length, draft: '' };
  }
  const [dialog, setDialogState] = useState<Dialog | undefined>(props.initialDialog);
  const dialogRef = useRef<Dialog | undefined>(props.initialDialog);
  const setDialog = useCallback(
    (next: Dialog | undefined | ((current: Dialog | undefined) => Dialog | undefined)) => {
      const value = typeof next === 'function' ? next(dialogRef.current) : next;
      dialogRef.current = value;
      setDialogState(value);
    },
    [],
  );
  const [showReasoning, setShowReasoning] = useState(false);
  const [epoch, setEpoch] = useState(0);
  const lastCtrlC = useRef(0);

  useEffect(() => controller.onSwitch(() => setStore(controller.store())), [controller]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs for each new store
  useEffect(() => {
    // A new store (session switch) re-prints the transcript from the top; the first one is
    // printed by the first render.
    if (!mounted.current) {
      mounted.current = true;
      return;
    }
    clearScreen();
    setEpoch((e) => e + 1);
  }, [store, clearScreen]);
  useEffect(() => {
    let timer: NodeJS.Timeout | undefined;
    const onResize = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        setSize((old) => {
          const next = { columns: stdout.columns || 80, rows: stdout.rows || 24 };
          if (next.columns !== old.columns) {
            // Printed lines were wrapped for the old width: clear and print them again. A raw
            // write, not Ink's writer: that one would draw the old-width frame again, which wraps
            // at the new width into more lines than Ink erases next, leaving its top rows on screen.
            // The next frame differs (its rules and status line follow the width), so Ink draws it.
            if (clearOnRedraw) stdout.write('\x1b[2J\x1b[3J\x1b[H');
            setEpoch((e) => e + 1);
          }
          return next;
        });
      }, 80);
    };
    stdout.on('resize', onResize);
    return () => {
      clearTimeout(timer);
      stdout.off('resize', onResize);
    };
  }, [stdout, clearOnRedraw]);
  // issue 15: said once, when commands run without the OS sandbox (auto mode, no bubblewrap).
  useEffect(() => {
    controller.client.callTool('sandbox_status', {}).then(
      (result) => {
        const notice = (result.value as { notice?: string | null } | undefined)?.notice;
        if (notice) controller.notice('warn', notice);
      },
      () => {}, // an older server without the tool: nothing to say
    );
  }, [controller]);
  useEffect(() => {
    if (!props.onboarding) return;
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
  }, [controller, props.onboarding, setDialog]);

  const close = useCallback(() => setDialog(undefined), [setDialog]);
  const sessionId = state.sessionId || undefined;

  const callReadout = useCallback(
    async (command: SlashCommand, args: string, signal: AbortSignal): Promise<ToolResult> => {
      const input = command.input?.(args, sessionId) ?? {};
      const names = [...(command.tools ?? [])];
      const byCli = command.cli ? controller.client.toolForCli(command.cli) : undefined;
      if (byCli && !names.includes(byCli)) names.push(byCli);
      let last: unknown;
      for (const name of names) {
        try {
          return await controller.client.callTool(name, input, { sessionId, signal });
        } catch (error) {
          if (!isMissingTool(error)) throw error;
          last = error;
        }
      }
      throw last ?? new Error(`no tool for /${command.name}`);
    },
    [controller, sessionId],
  );

  const action = useCallback(
    async (tool: string, input: Record<string, unknown>, done: (r: ToolResult) => string) => {
      try {
        const id = await controller.ensureSession();
        const result = await controller.client.callTool(
          tool,
          { session_id: id, ...input },
          { sessionId: id },
        );
        controller.notice('info', done(result));
      } catch (error) {
        controller.notice(isUnavailable(error) ? 'warn' : 'error', toSvcError(error).message);
      }
    },
    [controller],
  );

  const runCommand = useCallback(
    ({ command, args }: ParsedCommand) => {
      switch (command.name) {
        case 'help':
        case 'sessions':
        case 'pack':
        case 'undo':
        case 'providers':
        case 'why':
          return setDialog({ kind: command.name });
        case 'multiplayer_dashboard':
          return setDialog({ kind: 'dashboard' });
        case 'new':
          return void controller
            .open(undefined)
            .then(() => controller.notice('info', 'new session: the first prompt starts it'));
        case 'model':
          if (!args) return setDialog({ kind: 'model' });
          return void (async () => {
            try {
              const id = await controller.ensureSession();
              const session = await controller.client.setSessionModel(id, args);
              await controller.refresh();
              controller.notice('info', `model → ${session.model ?? args} (from the next turn)`);
            } catch (error) {
              controller.notice('error', toSvcError(error).message);
            }
          })();
        case 'enqueue':
          if (!args) return controller.notice('warn', 'usage: /enqueue <prompt>');
          return void controller.enqueue(args);
        case 'approve':
          return void action('approve_plan', {}, (r) => `plan approved${phaseOf(r.value)}`);
        case 'compact':
          return void action('summarize_session', {}, (r) => compactText(r.value));
        case 'quit':
          return exit();
        default:
          if (command.kind === 'readout') return setDialog({ kind: 'readout', command, args });
          return controller.notice('warn', `/${command.name} is not wired`);
      }
    },
    [controller, action, exit, setDialog],
  );

  const submit = useCallback(
    (text: string, queue: boolean) => {
      const trimmed = text.trim();
      if (!trimmed) return;
      historyRef.current = historyPush(historyRef.current!, trimmed);
      props.history?.append(trimmed);
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
    [controller, runCommand, props.history, setEditor],
  );

  const permission = state.permissions[0];
  const modal = Boolean(dialog) || Boolean(permission);

  // ctrl+c works everywhere: closes a dialog, clears the prompt, cancels, or (twice) quits.
  useInput((input, key) => {
    if (!(key.ctrl && input === 'c')) return;
    if (dialogRef.current) return setDialog(undefined);
    if (editorRef.current.value) return setEditor(EMPTY);
    if (state.state === 'running') return void controller.cancel();
    const now = Date.now();
    if (now - lastCtrlC.current < 1500) return exit();
    lastCtrlC.current = now;
    controller.notice('info', 'press ctrl+c again to quit');
  });

  useInput(
    (input, key) => {
      if (key.ctrl && input === 'c') return;
      // A dialog opened by an earlier key of the same burst owns the keys from now on.
      if (dialogRef.current || store.getSnapshot().permissions.length) return;
      const editor = editorRef.current;
      if (key.escape) {
        if (state.state === 'running' || state.state === 'compacting') void controller.cancel();
        return;
      }
      if (key.ctrl && input === 'p') return setDialog({ kind: 'palette' });
      if (key.ctrl && input === 's') return setDialog({ kind: 'sessions' });
      if (key.ctrl && input === 'n')
        return runCommand({ command: COMMANDS.find((c) => c.name === 'new')!, args: '' });
      if (key.ctrl && input === 'o') {
        // Printed items are not redrawn by Ink: print the transcript again with the new setting.
        setShowReasoning((v) => !v);
        clearScreen();
        return setEpoch((e) => e + 1);
      }
      const result = editKey(editor, input, key);
      switch (result.action) {
        case 'submit':
          return submit(result.state.value, false);
        case 'queue':
          return submit(result.state.value, true);
        case 'history-prev':
        case 'history-next': {
          const step = historyStep(
            historyRef.current!,
            editor.value,
            result.action === 'history-prev' ? -1 : 1,
          );
          historyRef.current = step.history;
          if (step.value !== undefined) setEditor({ value: step.value, cursor: step.value.length });
          return;
        }
        case 'complete': {
          const match = matchCommands(editor.value)[0];
          if (match) setEditor({ value: `/${match.name} `, cursor: match.name.length + 2 });
          return;
        }
        default:
          if (!result.unhandled) setEditor(result.state);
      }
    },
    { isActive: !modal },
  );

  const settled = settledCount(state.items);
  const staticItems = useMemo(() => state.items.slice(0, settled), [state.items, settled]);
  const live = state.items.slice(settled);
  const inputRows = Math.min(6, Math.max(1, editor.value.split('\n').length));
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
        {(item) => <ItemView key={item.key} item={item} showReasoning={showReasoning} diffLines={40} />}
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
        renderDialog(dialog)
      ) : (
        <Box flexDirection="column">
          {live.map((item) => (
            <ItemView
              key={item.key}
              item={item}
              showReasoning={showReasoning}
              maxLines={Math.max(2, Math.floor(liveBudget / Math.max(1, live.length)))}
              diffLines={Math.max(2, Math.floor(liveBudget / 2))}
            />
          ))}
          <InputBox editor={editor} maxRows={inputRows} busy={state.state !== 'idle'} hint={hint} />
        </Box>
      )}
      <StatusLine state={state} target={controller.client.info().target} width={size.columns} />
    </Box>
  );

  function renderDialog(d: Dialog) {
    const common = { height: dialogHeight };
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
                setEditor({ value: `/${command.name} `, cursor: command.name.length + 2 });
              } else runCommand({ command, args: '' });
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
            current={state.model}
            onCancel={close}
            onPick={(selector) => {
              setDialog(undefined);
              runCommand({ command: COMMANDS.find((c) => c.name === 'model')!, args: selector });
            }}
          />
        );
      case 'providers':
        return (
          <ProvidersDialog
            {...common}
            client={controller.client}
            onCancel={close}
            onRunAuth={
              props.runExternal
                ? (command) => {
                    setDialog(undefined);
                    void props.runExternal!(command).then(() => setDialog({ kind: 'providers' }));
                  }
                : undefined
            }
          />
        );
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
            load={(signal) => callReadout(d.command, d.args, signal)}
            onClose={close}
          />
        );
      case 'why':
        return (
          <WhyView
            {...common}
            client={controller.client}
            seen={state.lastFailure}
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
}

function compactText(value: unknown): string {
  const v = (value ?? {}) as Record<string, unknown>;
  if (v.scheduled === true) return 'compaction scheduled: before the next step of the active run';
  if (typeof v.tokens_before === 'number' && typeof v.tokens_after === 'number')
    return `compacted ${v.messages_summarized ?? 0} messages: ${v.tokens_before} → ${v.tokens_after} tokens`;
  return 'conversation compacted';
}

function phaseOf(value: unknown): string {
  const phase = (value as { phase?: unknown } | null)?.phase;
  return typeof phase === 'string' ? `: phase ${phase}` : '';
}
