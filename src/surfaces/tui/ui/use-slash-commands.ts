/**
 * What a slash command does in the TUI: open its dialog, call its tool (readouts through the
 * command's tools, then its CLI binding's tool), or act on the session (`/model <selector>`,
 * `/approve`, `/compact`, `/enqueue`, `/new`, `/quit`). Failures become transcript notices.
 * @module
 */
import { useCallback } from 'react';
import { toSvcError } from '../../../errors';
import { isMissingTool, isUnavailable, type ToolResult } from '../client';
import type { ParsedCommand, SlashCommand } from '../commands';
import type { ChatController } from '../state/chat-controller';
import type { DialogSetter } from './dialog-state';

export interface SlashCommands {
  runCommand(parsed: ParsedCommand): void;
  /** A readout command's tool result (its first tool this client reaches). */
  callReadout(command: SlashCommand, args: string, signal: AbortSignal): Promise<ToolResult>;
}

export function useSlashCommands(options: {
  controller: ChatController;
  sessionId: string | undefined;
  setDialog: DialogSetter;
  exit(): void;
}): SlashCommands {
  const { controller, sessionId, setDialog, exit } = options;

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
          return void setModel(controller, args);
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

  return { runCommand, callReadout };
}

/** `/model <selector>`: the session's model from the next turn. */
async function setModel(controller: ChatController, selector: string): Promise<void> {
  try {
    const id = await controller.ensureSession();
    const session = await controller.client.setSessionModel(id, selector);
    await controller.refresh();
    controller.notice('info', `model → ${session.model ?? selector} (from the next turn)`);
  } catch (error) {
    controller.notice('error', toSvcError(error).message);
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
