/**
 * "Do you trust this folder?": shown by the TUI before the app exists when the workspace's own
 * config sets keys that need trust (config/trust.ts) and the workspace is not trusted. Lists each
 * key with the command or URL it names (control characters shown, never acted on), then: trust
 * (remembered), continue without those keys (this session), or quit. Keys count a quarter second
 * after it opens, as in the permission dialog, so type-ahead cannot answer it.
 * @module
 */
import { Box, Text, useStdout } from 'ink';
import { useEffect, useRef, useState } from 'react';
import type { RiskyKey } from '../../../../config/trust-keys';
import { printable } from '../../../../util/terminal-text';
import { Frame } from '../frame';
import { useLatestInput } from '../use-latest-input';

export type TrustAnswer = 'trust' | 'without' | 'quit';

const CHOICES: { answer: TrustAnswer; key: string; label: string }[] = [
  { answer: 'trust', key: 't', label: 'trust this folder (remembered)' },
  { answer: 'without', key: 'c', label: 'continue without these keys' },
  { answer: 'quit', key: 'q', label: 'quit' },
];

const KIND_LABEL: Record<RiskyKey['kind'], string> = {
  command: 'runs',
  permission: 'loosens',
  endpoint: 'sends to',
};

export interface TrustDialogProps {
  workspace: string;
  keys: RiskyKey[];
  armDelayMs?: number;
  onAnswer(answer: TrustAnswer): void;
}

export function TrustDialog({ workspace, keys, armDelayMs = 250, onAnswer }: TrustDialogProps) {
  const [armed, setArmed] = useState(armDelayMs <= 0);
  const [index, setIndex] = useState(0);
  const latest = useRef(0);
  const { stdout } = useStdout();
  const columns = stdout.columns || 80;
  // Border, title, intro, the blank line, the choices and the hint: 10 rows around the list.
  const room = Math.max(3, (stdout.rows || 24) - 10);
  useEffect(() => {
    if (armDelayMs <= 0) return;
    const timer = setTimeout(() => setArmed(true), armDelayMs);
    return () => clearTimeout(timer);
  }, [armDelayMs]);

  useLatestInput((input, key) => {
    if (key.ctrl && input === 'c') return onAnswer('quit');
    if (!armed) return;
    const byKey = CHOICES.find((c) => c.key === input.toLowerCase());
    if (byKey) return onAnswer(byKey.answer);
    if (key.escape) return onAnswer('quit');
    const move = key.leftArrow || key.upArrow ? -1 : key.rightArrow || key.downArrow || key.tab ? 1 : 0;
    if (move) {
      latest.current = (latest.current + move + CHOICES.length) % CHOICES.length;
      setIndex(latest.current);
    } else if (key.return) onAnswer(CHOICES[latest.current].answer);
  });

  const shown = keys.length > room ? keys.slice(0, room - 1) : keys;
  const width = Math.max(20, columns - 8);
  return (
    <Frame
      title="Do you trust the files in this folder?"
      color="yellow"
      hint={armed ? 't trust · c continue without · q quit · ←/→ enter' : 'read the keys…'}
    >
      <Text wrap="truncate-end">
        {printable(workspace, width)} has config (svc.toml) that runs commands, loosens permissions or sends
        to remote hosts:
      </Text>
      {shown.map((k) => (
        <Text key={`${k.file}:${k.key}`} wrap="truncate-end">
          {'  '}
          <Text bold>{printable(k.key, 60)}</Text> {KIND_LABEL[k.kind]} {printable(k.detail, width)}
        </Text>
      ))}
      {shown.length < keys.length ? (
        <Text dimColor>{`  … and ${keys.length - shown.length} more`}</Text>
      ) : null}
      <Box marginTop={1} gap={2}>
        {CHOICES.map((c, i) => (
          <Text key={c.answer} inverse={armed && i === index} dimColor={!armed}>
            [{c.key}] {c.label}
          </Text>
        ))}
      </Box>
    </Frame>
  );
}
