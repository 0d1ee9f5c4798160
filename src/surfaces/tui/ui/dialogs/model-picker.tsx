/**
 * Model picker (`/model`): the models the configured providers offer; enter switches this
 * session's model, so the next turn uses it.
 * @module
 */
import { Text } from 'ink';
import { useEffect, useState } from 'react';
import { toSvcError } from '../../../../errors';
import type { ModelChoice, TuiClient } from '../../client';
import { Frame } from '../frame';
import { SelectList } from '../select-list';

export interface ModelPickerProps {
  client: TuiClient;
  current: string | null;
  height: number;
  isActive?: boolean;
  onPick(selector: string): void;
  onCancel(): void;
}

export function ModelPicker({ client, current, height, isActive, onPick, onCancel }: ModelPickerProps) {
  const [models, setModels] = useState<ModelChoice[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    client.listModels().then(setModels, (e) => setError(toSvcError(e).message));
  }, [client]);
  return (
    <Frame
      title={`Model${current ? ` · now ${current}` : ''}`}
      hint="type to filter · enter switch · esc close"
    >
      {error ? <Text color="red">{error}</Text> : null}
      {!models && !error ? <Text dimColor>loading models…</Text> : null}
      {models ? (
        <SelectList
          items={models}
          height={Math.max(3, height - 6)}
          isActive={isActive}
          keyOf={(m) => m.selector}
          filterText={(m) => `${m.selector} ${m.name}`}
          initialIndex={Math.max(
            0,
            models.findIndex((m) => m.selector === current),
          )}
          empty="no models: configure a provider (/providers)"
          onSelect={(m) => onPick(m.selector)}
          onCancel={onCancel}
          renderItem={(m) => (
            <Text wrap="truncate-end">
              {m.selector}
              <Text dimColor>
                {m.name !== m.selector.split('/').slice(1).join('/') ? `  ${m.name}` : ''}
                {m.context_window ? `  ${Math.round(m.context_window / 1000)}k ctx` : ''}
                {m.ready === false ? '  (not ready)' : ''}
                {m.selector === current ? '  ← current' : ''}
              </Text>
            </Text>
          )}
        />
      ) : null}
    </Frame>
  );
}
