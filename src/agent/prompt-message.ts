/**
 * A run's prompt message as its opening appends it (./run-loop.ts `openRun`), or as it rides in
 * its run's INSERT (p-pgstart2, ./prompt-queue.ts `sendNow`): the user's text, the run's id.
 * @module
 */
import type { SessionEventPayloads } from '../events/types';
import type { SessionStore } from '../sessions/session-store';

export function promptMessage(
  sessionId: string,
  runId: string,
  prompt: string,
): Parameters<SessionStore['appendMessage']>[0] {
  return {
    session_id: sessionId,
    role: 'user' as const,
    parts: [{ type: 'text' as const, text: prompt }],
    run_id: runId,
  };
}

/**
 * The prompt message's session events, in order: published by `openRun`, or joined to the lone
 * start's statement that writes the message (p-pgstart4, ./run-control.ts `startEvents`).
 */
export function promptEvents(
  sessionId: string,
  messageId: string,
  runId: string,
): [
  { type: 'message.created'; payload: SessionEventPayloads['message.created'] },
  { type: 'message.completed'; payload: SessionEventPayloads['message.completed'] },
] {
  return [
    {
      type: 'message.created',
      payload: { session_id: sessionId, message_id: messageId, role: 'user', run_id: runId },
    },
    { type: 'message.completed', payload: { session_id: sessionId, message_id: messageId, run_id: runId } },
  ];
}
