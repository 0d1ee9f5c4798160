/**
 * `/undo`: pick a checkpoint (newest first) and restore it with `checkpoint_restore`, after a
 * confirmation (restoring rewrites workspace files).
 * @module
 */
import { Text } from 'ink';
import { useEffect, useState } from 'react';
import { toSvcError } from '../../../../errors';
import type { TuiClient } from '../../client';
import { Frame } from '../frame';
import { SelectList } from '../select-list';
import { unavailableText } from './use-load';

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
  name: string;
  label: string;
}

export function UndoDialog({ client, sessionId, height, isActive, onClose, onRestored }: UndoDialogProps) {
  const [rows, setRows] = useState<CheckpointRow[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [confirm, setConfirm] = useState<CheckpointRow | undefined>();

  useEffect(() => {
    client.callTool('checkpoint_list', {}, { sessionId }).then(
      (r) => setRows(checkpointRows(r.value)),
      (e) => setError(unavailableText(e)),
    );
  }, [client, sessionId]);

  const restore = async (row: CheckpointRow) => {
    try {
      const { value } = await client.callTool('checkpoint_restore', { id: row.id }, { sessionId });
      onRestored(restoreText(row, value));
    } catch (e) {
      setError(toSvcError(e).message);
      setConfirm(undefined);
    }
  };

  return (
    <Frame
      title={
        confirm
          ? `Restore "${confirm.name}"? Files change back to that point (a safety checkpoint is taken first).`
          : 'Undo: restore a checkpoint'
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

function restoreText(row: CheckpointRow, value: unknown): string {
  const v = (value ?? {}) as {
    restored?: string[];
    deleted?: string[];
    skipped?: { path: string; reason: string }[];
    safety_checkpoint?: string | null;
  };
  const files = [
    ...(v.restored ?? []),
    ...(v.deleted ?? []).map((p) => `${p} (removed)`),
    ...(v.skipped ?? []).map((s) => `${s.path} (left alone: ${s.reason})`),
  ];
  if (!files.length) return `nothing to undo: the workspace already matches ${row.name}`;
  return `restored ${row.name}: ${files.slice(0, 8).join(', ')}${files.length > 8 ? ` +${files.length - 8} more` : ''}${v.safety_checkpoint ? ` (undo this with /undo → ${v.safety_checkpoint})` : ''}`;
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
    const name = String(r.name ?? r.label ?? r.message ?? '') || id;
    const when = at ? new Date(at > 1e12 ? at : at * 1000).toISOString().replace('T', ' ').slice(0, 19) : '';
    const auto = r.automatic === true ? '(automatic)' : '';
    return [{ id, at, name, label: [name, when, auto, name !== id ? id : ''].filter(Boolean).join('  ') }];
  });
  return rows.sort((a, b) => b.at - a.at).map(({ id, name, label }) => ({ id, name, label }));
}
