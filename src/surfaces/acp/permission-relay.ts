/**
 * Permission requests of a turn relayed to the ACP client as `session/request_permission`, and
 * the client's choice answered through `answer_permission` like every other client. A request
 * answered elsewhere first (the TUI, an HTTP client, a cancel) stops waiting for this client.
 * @module
 */
import type * as acp from '@agentclientprotocol/sdk/unstable';
import { z } from 'zod';
import type { SessionEventPayloads } from '../../events/types';
import type { PermissionDecision } from '../../permissions/permission-service';
import { callTool } from '../../tools/core/call-tool';
import { lazy } from '../../util/lazy';
import { toolKind } from './mapping';
import type { TurnContext } from './turn-context';

/** Permission options offered to the client, and the svc decision each one means. */
const PERMISSION_OPTIONS: {
  optionId: string;
  name: string;
  kind: acp.PermissionOptionKind;
  decision: PermissionDecision;
}[] = [
  { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once', decision: 'allow_once' },
  {
    optionId: 'allow_session',
    name: 'Allow for this session',
    kind: 'allow_always',
    decision: 'allow_session',
  },
  { optionId: 'deny', name: 'Deny', kind: 'reject_once', decision: 'deny' },
];

/** The ACP `RequestPermissionResponse` as svc reads it (the client is a peer: checked, not trusted). */
const permissionResponse = lazy(() =>
  z.looseObject({
    outcome: z.discriminatedUnion('outcome', [
      z.looseObject({ outcome: z.literal('cancelled') }),
      z.looseObject({ outcome: z.literal('selected'), optionId: z.string() }),
    ]),
  }),
);

/** The svc decision a client's answer means; anything malformed or unknown denies. */
export function decisionOf(response: unknown): { decision: PermissionDecision; malformed: boolean } {
  const parsed = permissionResponse().safeParse(response);
  if (!parsed.success) return { decision: 'deny', malformed: true };
  const { outcome } = parsed.data;
  if (outcome.outcome !== 'selected') return { decision: 'deny', malformed: false };
  const option = PERMISSION_OPTIONS.find((o) => o.optionId === outcome.optionId);
  return { decision: option?.decision ?? 'deny', malformed: !option };
}

export function askClient(turn: TurnContext, e: SessionEventPayloads['permission.requested']): void {
  const { app, session, sessionId, client, log } = turn;
  const pending = app.agent.pendingPermissions(sessionId).find((r) => r.request_id === e.request_id);
  const toolCallId = pending?.tool_call_id ?? `permission-${e.request_id}`;
  const diff = typeof e.details?.diff === 'string' ? e.details.diff : undefined;
  const command = typeof e.details?.command === 'string' ? e.details.command : undefined;
  const shown = diff ? `\`\`\`diff\n${diff}\n\`\`\`` : command ? `\`\`\`sh\n${command}\n\`\`\`` : undefined;
  const cancel = new AbortController();
  session.asks.set(e.request_id, cancel);
  turn.updates.after(() => {
    // Not awaited by the queue: updates keep flowing while the client decides.
    void client
      .request(
        'session/request_permission',
        {
          sessionId,
          toolCall: {
            toolCallId,
            title: e.title,
            kind: toolKind(e.tool),
            status: 'pending',
            ...(shown ? { content: [{ type: 'content', content: { type: 'text', text: shown } }] } : {}),
          },
          options: PERMISSION_OPTIONS.map(({ decision: _, ...o }) => o),
        },
        { cancellationSignal: cancel.signal, stopWaitingOnCancel: true },
      )
      .then(
        (response: unknown) => {
          const { decision, malformed } = decisionOf(response);
          if (malformed) {
            log.warn('acp permission answer malformed: treated as deny', {
              request_id: e.request_id,
              answer: JSON.stringify(response ?? null)?.slice(0, 200),
            });
          }
          answer(turn, e.request_id, decision);
        },
        (error) => {
          if (!cancel.signal.aborted) {
            log.warn('acp permission request failed', { error });
            answer(turn, e.request_id, 'deny');
          }
        },
      )
      .finally(() => session.asks.delete(e.request_id));
  });
}

function answer(turn: TurnContext, requestId: string, decision: PermissionDecision): void {
  // Through answer_permission, like every client. First answer wins: another client (or a
  // cancel) may have answered it already.
  void callTool(
    turn.app,
    'answer_permission',
    { session_id: turn.sessionId, request_id: requestId, decision },
    { surface: 'acp', sessionId: turn.sessionId },
  ).then((outcome) => {
    if (!outcome.ok) turn.log.debug('acp permission answer not taken', { error: outcome.error });
  });
}
