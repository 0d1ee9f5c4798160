/**
 * First run: no provider is ready. Pick a provider (or name one), paste its API key into the
 * credential store, or skip and configure svc.toml / an env var instead.
 * @module
 */
import { Box, Text } from 'ink';
import { useEffect, useState } from 'react';
import { toSvcError } from '../../../../errors';
import type { ProviderRow, TuiClient } from '../../client';
import { keySavedText } from '../../key-saved';
import { Frame } from '../frame';
import { SelectList } from '../select-list';
import { TextPrompt } from '../text-prompt';

export interface OnboardingProps {
  client: TuiClient;
  height: number;
  isActive?: boolean;
  /** Closed: with the confirmation to show when a key was saved. */
  onDone(saved?: string): void;
}

const OTHER: ProviderRow = {
  id: '…',
  name: 'another provider (type its id)',
  configured: false,
  ready: false,
  detail: '',
};

export function Onboarding({ client, height, isActive, onDone }: OnboardingProps) {
  const [rows, setRows] = useState<ProviderRow[]>([]);
  const [step, setStep] = useState<{ kind: 'pick' } | { kind: 'id' } | { kind: 'key'; provider: string }>({
    kind: 'pick',
  });
  const [message, setMessage] = useState<string | undefined>();
  useEffect(() => {
    client.providerStatus().then(setRows, () => setRows([]));
  }, [client]);

  const store = async (provider: string, key: string) => {
    try {
      await client.storeApiKey(provider, key);
      onDone(await keySavedText(client, provider));
    } catch (e) {
      setMessage(toSvcError(e).message);
      setStep({ kind: 'pick' });
    }
  };

  return (
    <Frame
      title="Welcome to svc: connect a model provider"
      hint="enter choose · esc skip (configure svc.toml or an env var later)"
    >
      <Text wrap="wrap">
        No provider is ready yet. Paste an API key below, or set one in svc.toml ([providers.&lt;id&gt;]
        api_key, or base_url for a local server) or the provider's env var. /providers manages them later.
      </Text>
      <Box marginTop={1} flexDirection="column">
        {step.kind === 'pick' ? (
          <SelectList
            items={[...rows, OTHER]}
            height={Math.max(2, height - 10)}
            isActive={isActive}
            keyOf={(r) => r.id}
            onSelect={(r) => setStep(r === OTHER ? { kind: 'id' } : { kind: 'key', provider: r.id })}
            onCancel={() => onDone()}
            renderItem={(r) => (
              <Text wrap="truncate-end">
                {r.id === '…' ? r.name : r.id}
                <Text dimColor>
                  {r.detail ? `  ${r.detail}` : ''}
                  {r.env_var ? `  (env ${r.env_var})` : ''}
                </Text>
              </Text>
            )}
          />
        ) : step.kind === 'id' ? (
          <TextPrompt
            key="provider-id"
            label="provider id:"
            isActive={isActive}
            onSubmit={(id) =>
              id.trim() ? setStep({ kind: 'key', provider: id.trim() }) : setStep({ kind: 'pick' })
            }
            onCancel={() => setStep({ kind: 'pick' })}
          />
        ) : (
          <TextPrompt
            key={`key:${step.provider}`}
            label={`API key for ${step.provider}:`}
            mask
            isActive={isActive}
            onSubmit={(key) => void store(step.provider, key)}
            onCancel={() => setStep({ kind: 'pick' })}
          />
        )}
      </Box>
      {message ? <Text color="yellow">{message}</Text> : null}
    </Frame>
  );
}
