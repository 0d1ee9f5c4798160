/**
 * A run's prompt message as its opening appends it (./run-loop.ts `openRun`), or as it rides in
 * its run's INSERT (p-pgstart2, ./prompt-queue.ts `sendNow`): the user's text, the run's id.
 * @module
 */
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
