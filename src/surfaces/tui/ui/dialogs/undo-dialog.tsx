/**
 * `/undo`: pick a checkpoint (newest first) and restore it with `checkpoint_restore`, after a
 * confirmation (restoring rewrites workspace files).
 * @module
 */
import { Text } from 'ink';
import { useEffect, useState } from 'react';
import { toSvcError } from '../../../../errors';
import { isUnavailable, type TuiClient } from '../../client';
import { Frame } from '../frame';
import { SelectList } from '../select-list';

export interface UndoDialogProps {
  client: TuiClient;
  sessionId?: string;
  height: number;
  isActive?: boolean;
  onClose(): void;
  onRestored(message: string): void;
}

interface CheckpointRow {
  id: string;
  label: string;
}

export function UndoDialog({ client, sessionId, height, isActive, onClose, onRestored }: UndoDialogProps) {
  const [rows, setRows] = useState<CheckpointRow[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [confirm, setConfirm] = useState<CheckpointRow | undefined>();

  useEffect(() => {
    client.callTool('checkpoint_list', sessionId ? { session_id: sessionId } : {}, { sessionId }).then(
      (r) => setRows(checkpointRows(r.value)),
      (e) => setError(isUnavailable(e) ? `not available: ${toSvcError(e).message}` : toSvcError(e).message),
    );
  }, [client, sessionId]);

  const restore = async (row: CheckpointRow) => {
    try {
      await client.callTool('checkpoint_restore', { id: row.id }, { sessionId });
      onRestored(`restored checkpoint ${row.label}`);
    } catch (e) {
      setError(toSvcError(e).message);
      setConfirm(undefined);
    }
  };

  return (
    <Frame
      title={
        confirm ? `Restore ${confirm.label}? Files change back to that point.` : 'Undo: restore a checkpoint'
      }
      hint={confirm ? 'y restore · n/esc back' : 'enter restore · esc close'}
    >
      {error ? <Text color="yellow">{error}</Text> : null}
      {!rows && !error ? <Text dimColor>loading checkpoints…</Text> : null}
      {rows || error ? (
        <SelectList
          items={rows ?? []}
          height={Math.max(2, height - 5)}
          isActive={isActive}
          keyOf={(r) => r.id}
          empty={error ? ' ' : 'no checkpoints yet'}
          onSelect={(r) => setConfirm(r)}
          onCancel={() => (confirm ? setConfirm(undefined) : onClose())}
          onKey={(input, key) => {
            if (!confirm) return false;
            if (input === 'y') void restore(confirm);
            else if (input === 'n' || key.escape) setConfirm(undefined);
            return true;
          }}
          renderItem={(r) => <Text wrap="truncate-end">{r.label}</Text>}
        />
      ) : null}
    </Frame>
  );
}

export function checkpointRows(value: unknown): CheckpointRow[] {
  const v = (value ?? {}) as Record<string, unknown>;
  const list = Array.isArray(value) ? value : (v.checkpoints ?? v.items ?? []);
  if (!Array.isArray(list)) return [];
  const rows = list.flatMap((c): (CheckpointRow & { at: number })[] => {
    const r = (c ?? {}) as Record<string, unknown>;
    const id = r.id ?? r.checkpoint_id;
    if (typeof id !== 'string') return [];
    const at = Number(r.created_at ?? 0);
    const name = String(r.name ?? r.label ?? r.message ?? '');
    const when = at ? new Date(at > 1e12 ? at : at * 1000).toISOString().replace('T', ' ').slice(0, 19) : '';
    return [{ id, at, label: [name || id, when, name ? id : ''].filter(Boolean).join('  ') }];
  });
  return rows.sort((a, b) => b.at - a.at).map(({ id, label }) => ({ id, label }));
}
