/**
 * A slash-command readout: calls the command's tool through the client and shows the same text
 * the CLI prints, scrollable; r reloads. A tool that is not in this build shows one clear
 * "not available" line.
 * @module
 */
import { Text, useStdout } from 'ink';
import { useMemo } from 'react';
import { safeTerminalText } from '../../../../util/terminal-text';
import type { ToolResult } from '../../client';
import { Frame } from '../frame';
import { ScrollView } from '../scroll-view';
import { useLatestInput } from '../use-latest-input';
import { wrapLines } from '../wrap-lines';
import { useLoad } from './use-load';

export interface ReadoutViewProps {
  title: string;
  load(signal: AbortSignal): Promise<ToolResult>;
  height: number;
  isActive?: boolean;
  timeoutMs?: number;
  /** Wrap long lines to the frame (prose such as /why) instead of cutting them (tables). */
  wrap?: boolean;
  onClose(): void;
}

export function ReadoutView({
  title,
  load,
  height,
  isActive,
  timeoutMs = 10_000,
  wrap,
  onClose,
}: ReadoutViewProps) {
  const { state, reload } = useLoad(load, timeoutMs);
  const { stdout } = useStdout();
  useLatestInput(
    (input, key) => {
      if (key.escape || input === 'q') onClose();
      else if (input === 'r') reload();
    },
    { isActive: isActive !== false },
  );
  // A readout quotes outside text (a server's error, a failed command's output): made safe once.
  const text = useMemo(
    () =>
      state.status === 'ready'
        ? safeTerminalText(state.value.text ?? JSON.stringify(state.value.value, null, 2)).split('\n')
        : ['loading…'],
    [state],
  );
  // Inside the frame: its border and padding take four columns.
  const lines = wrap ? wrapLines(text, Math.max(20, (stdout.columns || 80) - 4)) : text;
  return (
    <Frame title={title} hint="r refresh · ↑↓ pgup pgdn scroll · esc close">
      {state.status === 'error' ? (
        <Text color={state.unavailable ? 'yellow' : 'red'} wrap="wrap">
          {safeTerminalText(
            state.unavailable ? `not available: ${state.message}` : `error: ${state.message}`,
          )}
        </Text>
      ) : (
        <ScrollView lines={lines} height={Math.max(3, height - 5)} isActive={isActive} />
      )}
    </Frame>
  );
}
