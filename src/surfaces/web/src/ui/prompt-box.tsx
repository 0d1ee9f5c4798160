/**
 * The prompt box: Enter sends (a prompt sent during a run waits its turn), Ctrl+Enter queues,
 * Shift+Enter is a new line; Cancel stops the run; Undo puts the workspace back to the
 * checkpoint taken before the latest prompt.
 * @module
 */
import { useRef, useState } from 'preact/hooks';
import type { TranscriptState } from '../../../tui/state/transcript';
import type { Api } from '../api';
import type { ControllerState, SessionController } from '../session-controller';
import { outsideText } from './common';
import { errorMessage } from './hooks';

export function PromptBox(props: {
  api: Api;
  controller: SessionController;
  transcript: TranscriptState;
  state: ControllerState;
}) {
  const { api, controller, transcript, state } = props;
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [undoNote, setUndoNote] = useState<string>();
  const area = useRef<HTMLTextAreaElement>(null);
  const running = transcript.state !== 'idle';

  const submit = async (mode: 'send' | 'queue') => {
    if (!text.trim() || busy) return;
    setBusy(true);
    const ok = await controller.send(text, mode);
    setBusy(false);
    if (ok) setText('');
    area.current?.focus();
  };

  const undo = async () => {
    const checkpoint = state.lastCheckpoint;
    if (!checkpoint) return;
    if (
      !confirm(
        `Put the workspace back to checkpoint "${outsideText(checkpoint.name)}"? Files changed since are restored; a safety checkpoint is taken first.`,
      )
    )
      return;
    setUndoNote(undefined);
    try {
      const result = await api.post<{
        restored: string[];
        deleted: string[];
        skipped?: { path: string }[];
        safety_checkpoint: string | null;
      }>(`v1/checkpoints/${encodeURIComponent(checkpoint.id)}/restore`, {});
      setUndoNote(
        result.safety_checkpoint === null
          ? 'Nothing to undo: the workspace already matches the checkpoint.'
          : `Undone: ${result.restored.length} file(s) written back, ${result.deleted.length} removed${result.skipped?.length ? `, ${result.skipped.length} left alone (reached through a symlink)` : ''} (the previous state is checkpoint ${result.safety_checkpoint}).`,
      );
    } catch (error) {
      controller.setActionError(`Undo failed: ${errorMessage(error)}`);
    }
  };

  return (
    <form
      class="prompt-box"
      onSubmit={(event) => {
        event.preventDefault();
        void submit('send');
      }}
    >
      {transcript.queue.length ? (
        <section class="queue" aria-label="Queued prompts">
          <strong>Queued ({transcript.queue.length}):</strong>
          <ol>
            {transcript.queue.map((q) => (
              <li key={q.id}>{q.preview}</li>
            ))}
          </ol>
        </section>
      ) : null}
      {state.actionError ? (
        <p class="error-line" role="alert">
          {state.actionError}
        </p>
      ) : null}
      {undoNote ? (
        <p class="note" role="status">
          {undoNote}
        </p>
      ) : null}
      {state.checkpointNote ? <p class="muted">{state.checkpointNote}</p> : null}
      <label for="prompt" class="sr-only">
        Prompt
      </label>
      <textarea
        id="prompt"
        ref={area}
        rows={3}
        placeholder={
          running
            ? 'A prompt sent now waits for the run (Ctrl+Enter queues)'
            : 'Ask svc… (Enter sends, Shift+Enter new line)'
        }
        value={text}
        onInput={(event) => setText((event.target as HTMLTextAreaElement).value)}
        onKeyDown={(event) => {
          if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
          event.preventDefault();
          void submit(event.ctrlKey || event.metaKey ? 'queue' : 'send');
        }}
      />
      <div class="prompt-actions">
        <button type="submit" class="primary" disabled={busy || !text.trim()}>
          Send
        </button>
        <button type="button" disabled={busy || !text.trim()} onClick={() => void submit('queue')}>
          Queue
        </button>
        {running ? (
          <button type="button" class="danger" onClick={() => void controller.cancel()}>
            Cancel run
          </button>
        ) : null}
        <div class="spacer" />
        <button
          type="button"
          disabled={!state.lastCheckpoint || running}
          title={
            state.lastCheckpoint
              ? `Restore "${outsideText(state.lastCheckpoint.name)}"`
              : 'No checkpoint taken in this page yet'
          }
          onClick={() => void undo()}
        >
          Undo last prompt
        </button>
      </div>
    </form>
  );
}
