/**
 * A checkpoint (`checkpoint_create`) before each prompt that starts a run, so `/undo` can put the
 * workspace back to before it. The first failure turns it off for the rest of the session, with a
 * notice saying why (none when attached to a server without the route).
 * @module
 */
import { toSvcError } from '../../../errors';
import type { TuiClient } from '../client';
import type { NoticeItem } from './transcript';

/** Takes a checkpoint before `prompt` in the session, while checkpoints work here. */
export type PromptCheckpoint = (sessionId: string, prompt: string) => Promise<void>;

export function createPromptCheckpoint(
  client: TuiClient,
  notice: (level: NoticeItem['level'], text: string) => void,
  enabled: boolean,
): PromptCheckpoint {
  let checkpoints = enabled;
  return async (sessionId, prompt) => {
    if (!checkpoints) return;
    const firstLine = prompt.split('\n')[0];
    const preview = firstLine.length > 60 ? `${firstLine.slice(0, 59)}…` : firstLine;
    try {
      await client.callTool(
        'checkpoint_create',
        { name: `before: ${preview}`, description: prompt.slice(0, 2000) },
        { sessionId },
      );
    } catch (error) {
      checkpoints = false;
      const e = toSvcError(error);
      const reason = (e.details as { reason?: string } | undefined)?.reason;
      if (e.code === 'unavailable' && !reason) return; // attached to a server without the route
      notice(
        'info',
        reason === 'not_a_git_repository'
          ? 'no checkpoints before prompts: this workspace is not a git repository (/undo has nothing to restore)'
          : `no checkpoints before prompts: ${e.message}`,
      );
    }
  };
}
