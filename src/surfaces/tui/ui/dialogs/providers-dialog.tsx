/**
 * Manage Providers: each provider's status, the `svc auth …` command that bootstraps its
 * credentials (o runs it here, in this terminal), and k to paste an API key into the credential
 * store. The key is masked on screen and never shown again.
 * @module
 */
import { Box, Text } from 'ink';
import { useCallback, useEffect, useState } from 'react';
import { toSvcError } from '../../../../errors';
import type { ProviderRow, TuiClient } from '../../client';
import { keySavedText } from '../../key-saved';
import { Frame } from '../frame';
import { SelectList } from '../select-list';
import { TextPrompt } from '../text-prompt';

export interface ProvidersDialogProps {
  client: TuiClient;
  height: number;
  isActive?: boolean;
  /** Runs an OAuth bootstrap command in the terminal (local TUI only). */
  onRunAuth?: (command: string) => void;
  onCancel(): void;
}

export function ProvidersDialog({ client, height, isActive, onRunAuth, onCancel }: ProvidersDialogProps) {
  const [rows, setRows] = useState<ProviderRow[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [message, setMessage] = useState<string | undefined>();
  const [keyFor, setKeyFor] = useState<ProviderRow | undefined>();

  const load = useCallback(() => {
    client.providerStatus().then(
      (r) => {
        // Ready first, then configured, then the rest of the catalog (its order otherwise).
        const rank = (row: ProviderRow) => (row.ready ? 0 : row.configured ? 1 : 2);
        setRows([...r].sort((a, b) => rank(a) - rank(b)));
        setError(undefined);
      },
      (e) => setError(toSvcError(e).message),
    );
  }, [client]);
  useEffect(load, [load]);

  const store = async (row: ProviderRow, key: string) => {
    setKeyFor(undefined);
    try {
      await client.storeApiKey(row.id, key);
      setMessage(await keySavedText(client, row.id));
      load();
    } catch (e) {
      setMessage(toSvcError(e).message);
    }
  };

  return (
    <Frame
      title="Manage Providers"
      hint="enter/k paste API key · o start OAuth (svc auth) · r refresh · esc close"
    >
      {error ? <Text color="red">{error}</Text> : null}
      {!rows && !error ? <Text dimColor>loading provider status…</Text> : null}
      {rows ? (
        <SelectList
          items={rows}
          height={Math.max(2, height - 10)}
          isActive={isActive !== false && !keyFor}
          keyOf={(r) => r.id}
          empty="no providers configured: add [providers.<id>] to svc.toml, or run svc auth <platform>"
          onSelect={(row) => setKeyFor(row)}
          onCancel={onCancel}
          details={(current) =>
            current ? (
              <Box flexDirection="column" marginTop={1}>
                {current.auth_command ? <Text wrap="truncate-end">OAuth: {current.auth_command}</Text> : null}
                {current.env_var ? <Text wrap="truncate-end">env: {current.env_var}</Text> : null}
              </Box>
            ) : null
          }
          onKey={(input, _key, row) => {
            if (input === 'r') {
              load();
              return true;
            }
            if (input === 'k' && row) {
              setKeyFor(row);
              return true;
            }
            if (input === 'o' && row) {
              if (row.auth_command && onRunAuth) onRunAuth(row.auth_command);
              else
                setMessage(
                  row.auth_command
                    ? `run: ${row.auth_command}`
                    : `${row.id} has no OAuth bootstrap; paste an API key (k)`,
                );
              return true;
            }
            return false;
          }}
          renderItem={(r) => (
            <Text wrap="truncate-end">
              <Text color={r.ready ? 'green' : r.configured ? 'yellow' : 'red'}>{r.ready ? '✓' : '✗'}</Text>{' '}
              {r.id}
              <Text dimColor>
                {'  '}
                {r.detail}
              </Text>
            </Text>
          )}
        />
      ) : null}
      {keyFor ? (
        <TextPrompt
          label={`API key for ${keyFor.id}:`}
          mask
          isActive={isActive !== false}
          onSubmit={(key) => void store(keyFor, key)}
          onCancel={() => setKeyFor(undefined)}
        />
      ) : null}
      {message ? (
        <Text color={message.includes(' is ready') ? 'green' : 'yellow'} wrap="wrap">
          {message}
        </Text>
      ) : null}
    </Frame>
  );
}
