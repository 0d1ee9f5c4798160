/**
 * Sessions (`/sessions`, ctrl+s): switch with enter, n starts a new one.
 * @module
 */
import { Text } from 'ink';
import { useEffect, useState } from 'react';
import { toSvcError } from '../../../../errors';
import type { SessionSummary, TuiClient } from '../../client';
import { Frame } from '../frame';
import { SelectList } from '../select-list';

export interface SessionListProps {
  client: TuiClient;
  activeId?: string;
  height: number;
  isActive?: boolean;
  onOpen(sessionId: string): void;
  onNew(): void;
  onCancel(): void;
}

export function SessionList({
  client,
  activeId,
  height,
  isActive,
  onOpen,
  onNew,
  onCancel,
}: SessionListProps) {
  const [sessions, setSessions] = useState<SessionSummary[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    // The app's client made the titles and messages safe (state/safe-text.ts safeClient).
    client.listSessions().then(setSessions, (e) => setError(toSvcError(e).message));
  }, [client]);
  return (
    <Frame title="Sessions" hint="enter open · n new · esc close">
      {error ? <Text color="red">{error}</Text> : null}
      {!sessions && !error ? <Text dimColor>loading sessions…</Text> : null}
      {sessions ? (
        <SelectList
          items={sessions}
          height={Math.max(3, height - 5)}
          isActive={isActive}
          keyOf={(s) => s.id}
          initialIndex={Math.max(
            0,
            sessions.findIndex((s) => s.id === activeId),
          )}
          empty="no sessions yet: n starts one"
          onSelect={(s) => onOpen(s.id)}
          onCancel={onCancel}
          onKey={(input) => {
            if (input === 'n') {
              onNew();
              return true;
            }
            return false;
          }}
          renderItem={(s) => (
            <Text wrap="truncate-end">
              {s.title || '(untitled)'}
              <Text dimColor>
                {'  '}
                {s.id}
                {s.model ? `  ${s.model}` : ''}
                {s.id === activeId ? '  ← open' : ''}
              </Text>
            </Text>
          )}
        />
      ) : null}
    </Frame>
  );
}
