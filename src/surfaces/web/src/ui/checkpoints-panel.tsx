/**
 * Checkpoints of the workspace (one is taken before each prompt sent from here or the TUI):
 * take one, or restore one (a safety checkpoint of the current state is taken first, so a
 * restore can itself be undone).
 * @module
 */
import { useState } from 'preact/hooks';
import type { Api } from '../api';
import { Badge, ErrorBox, formatTime, Loading, outsideText, ReadoutFrame } from './common';
import { errorMessage, useResource } from './hooks';

interface Checkpoint {
  id: string;
  name: string;
  description: string | null;
  commit: string;
  branch: string | null;
  automatic: boolean;
  created_at: number;
}

export function CheckpointsPanel({ api }: { api: Api }) {
  const list = useResource(() => api.get<{ checkpoints: Checkpoint[] }>('v1/checkpoints'), [api]);
  const [note, setNote] = useState<{ tone: 'ok' | 'bad'; text: string }>();
  const [busy, setBusy] = useState(false);

  const act = async (what: () => Promise<string>) => {
    setBusy(true);
    setNote(undefined);
    try {
      setNote({ tone: 'ok', text: await what() });
    } catch (error) {
      setNote({ tone: 'bad', text: errorMessage(error) });
    } finally {
      setBusy(false);
      list.reload();
    }
  };

  if (list.error && !list.data)
    return <ErrorBox title="Checkpoints unavailable" error={list.error} onRetry={list.reload} />;
  if (!list.data) return <Loading what="checkpoints" />;
  return (
    <ReadoutFrame
      title="Checkpoints"
      source="GET v1/checkpoints"
      data={list.data}
      actions={
        <button
          type="button"
          disabled={busy}
          onClick={() =>
            void act(async () => {
              const c = await api.post<Checkpoint>('v1/checkpoints', {
                name: `manual: ${new Date().toLocaleString()}`,
              });
              return `Checkpoint ${c.id} taken.`;
            })
          }
        >
          Take a checkpoint
        </button>
      }
    >
      {note ? (
        <p class={note.tone === 'ok' ? 'note' : 'error-line'} role={note.tone === 'ok' ? 'status' : 'alert'}>
          {note.text}
        </p>
      ) : null}
      {list.data.checkpoints.length === 0 ? (
        <p class="empty">No checkpoints yet. One is taken before each prompt.</p>
      ) : (
        <ul class="checkpoints">
          {list.data.checkpoints.map((c) => (
            <li key={c.id}>
              <div>
                <strong>{outsideText(c.name)}</strong> {c.automatic ? <Badge>automatic</Badge> : null}
                <div class="meta">
                  <code>{c.id}</code> · {formatTime(c.created_at)} · {outsideText(c.branch) || 'detached'} @{' '}
                  {c.commit.slice(0, 10)}
                </div>
              </div>
              <button
                type="button"
                disabled={busy}
                onClick={() => {
                  if (
                    !confirm(
                      `Restore checkpoint "${outsideText(c.name)}"? Files changed since are put back; a safety checkpoint is taken first.`,
                    )
                  )
                    return;
                  void act(async () => {
                    const r = await api.post<{
                      restored: string[];
                      deleted: string[];
                      skipped?: { path: string }[];
                      safety_checkpoint: string | null;
                    }>(`v1/checkpoints/${encodeURIComponent(c.id)}/restore`, {});
                    return r.safety_checkpoint === null
                      ? 'The workspace already matches this checkpoint; nothing changed.'
                      : `Restored: ${r.restored.length} file(s) written back, ${r.deleted.length} removed${r.skipped?.length ? `, ${r.skipped.length} left alone (reached through a symlink)` : ''}. The previous state is checkpoint ${r.safety_checkpoint}.`;
                  });
                }}
              >
                Restore
              </button>
            </li>
          ))}
        </ul>
      )}
    </ReadoutFrame>
  );
}
