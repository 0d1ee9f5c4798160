/**
 * A slash-command readout: calls the command's tool through the client and shows the same text
 * the CLI prints, scrollable; r reloads. A tool that is not in this build shows one clear
 * "not available" line.
 * @module
 */
import { Text, useInput } from 'ink';
import type { ToolResult } from '../../client';
import { Frame } from '../frame';
import { ScrollView } from '../scroll-view';
import { useLoad } from './use-load';

export interface ReadoutViewProps {
  title: string;
  load(signal: AbortSignal): Promise<ToolResult>;
  height: number;
  isActive?: boolean;
  timeoutMs?: number;
  onClose(): void;
}

export function ReadoutView({
  title,
  load,
  height,
  isActive,
  timeoutMs = 10_000,
  onClose,
}: ReadoutViewProps) {
  const { state, reload } = useLoad(load, timeoutMs);
  useInput(
    (input, key) => {
      if (key.escape || input === 'q') onClose();
      else if (input === 'r') reload();
    },
    { isActive: isActive !== false },
  );
  const lines =
    state.status === 'ready'
      ? (state.value.text ?? JSON.stringify(state.value.value, null, 2)).split('\n')
      : ['loading…'];
  return (
    <Frame title={title} hint="r refresh · ↑↓ pgup pgdn scroll · esc close">
      {state.status === 'error' ? (
        <Text color={state.unavailable ? 'yellow' : 'red'} wrap="wrap">
          {state.unavailable ? `not available: ${state.message}` : `error: ${state.message}`}
        </Text>
      ) : (
        <ScrollView lines={lines} height={Math.max(3, height - 5)} isActive={isActive} />
      )}
    </Frame>
  );
}
