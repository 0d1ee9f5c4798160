/**
 * `/pack`: the operating pack picker. It reads and changes the session's pack through the pack
 * tools (`session_list_packs`, `session_set_pack`, `session_clear_pack`, `get_operating_mode`):
 * the same controller as the `/v1/session-operating-mode` routes.
 * @module
 */
import { Box, Text } from 'ink';
import { useCallback, useEffect, useState } from 'react';
import { toSvcError } from '../../../../errors';
import type { TuiClient } from '../../client';
import { Frame } from '../frame';
import { SelectList } from '../select-list';
import { unavailableText } from './use-load';

export interface PackPickerProps {
  client: TuiClient;
  sessionId?: string;
  height: number;
  isActive?: boolean;
  onClose(): void;
}

interface PackRow {
  /** What session_set_pack takes: a pack name or a preset id. */
  name: string;
  description: string;
  kind: 'pack' | 'preset';
  /** False when the manifest does not validate (activation would be refused). */
  valid: boolean;
}

export function PackPicker({ client, sessionId, height, isActive, onClose }: PackPickerProps) {
  const [packs, setPacks] = useState<PackRow[] | undefined>();
  // The pack tools are the operating-mode routes' controller (app.packs): OPMODE-49.
  const [active, setActive] = useState<string>('');
  const [state, setState] = useState<string>('');
  const [error, setError] = useState<string | undefined>();
  const [message, setMessage] = useState<string | undefined>();

  const load = useCallback(async () => {
    if (!sessionId) {
      setError('no session yet: send a prompt (or /new) first');
      return;
    }
    try {
      const [list, mode] = await Promise.all([
        client.callTool('session_list_packs', {}, { sessionId }),
        client
          .callTool('get_operating_mode', { session_id: sessionId }, { sessionId })
          .catch(() => undefined),
      ]);
      setPacks(packRows(list.value));
      const m = (mode?.value ?? {}) as Record<string, unknown>;
      setActive(String(m.active_operating_pack ?? ''));
      setState(String(m.state ?? ''));
      setError(undefined);
    } catch (e) {
      setError(unavailableText(e));
    }
  }, [client, sessionId]);
  useEffect(() => {
    void load();
  }, [load]);

  const run = async (tool: string, input: Record<string, unknown>, done: string) => {
    try {
      await client.callTool(tool, input, { sessionId });
      setMessage(done);
      await load();
    } catch (e) {
      setMessage(toSvcError(e).message);
    }
  };

  return (
    <Frame
      title={`Operating pack${active ? ` · active ${active}` : ''}${state ? ` · ${state}` : ''}`}
      hint="enter activate · c clear · r refresh · esc close"
    >
      {error ? <Text color="yellow">{error}</Text> : null}
      {!packs && !error ? <Text dimColor>loading packs…</Text> : null}
      {packs || error ? (
        <SelectList
          items={packs ?? []}
          height={Math.max(2, height - 6)}
          isActive={isActive}
          keyOf={(p) => p.name}
          empty={error ? ' ' : 'no packs found (.svc/packs/<name>/ in the workspace or your config dir)'}
          onSelect={(p) =>
            void run(
              'session_set_pack',
              { session_id: sessionId, pack_path_or_name: p.name },
              `activated ${p.name}`,
            )
          }
          onCancel={onClose}
          onKey={(input) => {
            if (input === 'c' && sessionId) {
              void run('session_clear_pack', { session_id: sessionId }, 'pack cleared');
              return true;
            }
            if (input === 'r') {
              void load();
              return true;
            }
            return false;
          }}
          renderItem={(p) => (
            <Text wrap="truncate-end">
              {p.kind === 'preset' ? <Text dimColor>preset </Text> : null}
              {p.name}
              <Text dimColor>
                {p.description ? `  ${p.description}` : ''}
                {p.valid ? '' : '  (does not validate)'}
                {p.name === active ? '  ← active' : ''}
              </Text>
            </Text>
          )}
        />
      ) : null}
      {message ? (
        <Box>
          <Text color="yellow">{message}</Text>
        </Box>
      ) : null}
    </Frame>
  );
}

/** Packs and presets from `session_list_packs` (`{ packs, presets }`). */
export function packRows(value: unknown): PackRow[] {
  const v = (value ?? {}) as Record<string, unknown>;
  const list = (x: unknown) => (Array.isArray(x) ? x : []);
  const packs = list(Array.isArray(value) ? value : v.packs).flatMap((p): PackRow[] => {
    if (typeof p === 'string') return [{ name: p, description: '', kind: 'pack', valid: true }];
    const r = (p ?? {}) as Record<string, unknown>;
    const name = r.name ?? r.id;
    return typeof name === 'string'
      ? [{ name, description: String(r.description ?? ''), kind: 'pack', valid: r.valid !== false }]
      : [];
  });
  const presets = list(v.presets).flatMap((p): PackRow[] => {
    const r = (p ?? {}) as Record<string, unknown>;
    if (typeof r.id !== 'string') return [];
    const about = [r.description, r.pack ? `pack ${r.pack}` : ''].filter(Boolean).join(' · ');
    return [{ name: r.id, description: about, kind: 'preset', valid: r.resolves !== false }];
  });
  return [...packs, ...presets];
}
