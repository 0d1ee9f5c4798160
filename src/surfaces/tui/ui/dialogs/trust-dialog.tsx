/**
 * "Do you trust this folder?": shown by the TUI before the app exists when the workspace's own
 * config sets keys that need trust (config/trust.ts) and the workspace is not trusted. Lists each
 * key with the command or URL it names (control characters shown, never acted on), then: trust
 * (remembered), continue without those keys (this session), or quit. Keys count a quarter second
 * after it opens, as in the permission dialog, so type-ahead cannot answer it. Each command is
 * shown whole, wrapped (a cut line could hide the payload after harmless text), and a list longer
 * than the screen scrolls with ↑/↓: trust is taken only once every key has been on screen (a
 * harmless first key hid the rest behind "… and N more", found by probing).
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

/** The most characters of one key's detail shown (a whole command, bounded). */
const DETAIL_MAX = 2000;

export function TrustDialog({ workspace, keys, armDelayMs = 250, onAnswer }: TrustDialogProps) {
  const [armed, setArmed] = useState(armDelayMs <= 0);
  const [index, setIndex] = useState(0);
  const [offset, setOffset] = useState(0);
  const latest = useRef(0);
  const scroll = useRef({ offset: 0, seenAll: false });
  const { stdout } = useStdout();
  const columns = stdout.columns || 80;
  // Border, title, intro, the scroll lines, the choices and the hint: 11 rows around the list.
  const room = Math.max(2, (stdout.rows || 24) - 11);
  const last = Math.max(0, keys.length - room);
  if (offset >= last) scroll.current.seenAll = true;
  useEffect(() => {
    if (armDelayMs <= 0) return;
    const timer = setTimeout(() => setArmed(true), armDelayMs);
    return () => clearTimeout(timer);
  }, [armDelayMs]);

  const answer = (a: TrustAnswer) => {
    // Trust only what was read: every key on screen once.
    if (a !== 'trust' || scroll.current.seenAll) onAnswer(a);
  };
  useLatestInput((input, key) => {
    if (key.ctrl && input === 'c') return onAnswer('quit');
    if (!armed) return;
    const lines = key.upArrow ? -1 : key.downArrow ? 1 : key.pageUp ? -room : key.pageDown ? room : 0;
    if (lines) {
      scroll.current.offset = Math.min(last, Math.max(0, scroll.current.offset + lines));
      if (scroll.current.offset >= last) scroll.current.seenAll = true;
      return setOffset(scroll.current.offset);
    }
    const byKey = CHOICES.find((c) => c.key === input.toLowerCase());
    if (byKey) return answer(byKey.answer);
    if (key.escape) return onAnswer('quit');
    const move = key.leftArrow ? -1 : key.rightArrow || key.tab ? 1 : 0;
    if (move) {
      latest.current = (latest.current + move + CHOICES.length) % CHOICES.length;
      setIndex(latest.current);
    } else if (key.return) answer(CHOICES[latest.current].answer);
  });

  const shown = keys.slice(offset, offset + room);
  const below = keys.length - offset - shown.length;
  const width = Math.max(20, columns - 8);
  const readAll = keys.length > room && !scroll.current.seenAll;
  return (
    <Frame
      title="Do you trust the files in this folder?"
      color="yellow"
      hint={
        !armed
          ? 'read the keys…'
          : readAll
            ? '↓ read every key before trusting · c continue without · q quit'
            : 't trust · c continue without · q quit · ←/→ enter · ↑/↓ scroll'
      }
    >
      <Text wrap="truncate-end">
        {printable(workspace, width)} has config (svc.toml) that runs commands, loosens permissions or sends
        to remote hosts ({keys.length} {keys.length === 1 ? 'key' : 'keys'}):
      </Text>
      {offset > 0 ? <Text dimColor>{`  ↑ ${offset} more above`}</Text> : null}
      {shown.map((k) => (
        <Text key={`${k.file}:${k.key}`} wrap="wrap">
          {'  '}
          <Text bold>{printable(k.key, 200)}</Text> {KIND_LABEL[k.kind]} {printable(k.detail, DETAIL_MAX)}
        </Text>
      ))}
      {below > 0 ? <Text dimColor>{`  ↓ ${below} more below`}</Text> : null}
      <Box marginTop={1} gap={2}>
        {CHOICES.map((c, i) => (
          <Text
            key={c.answer}
            inverse={armed && i === index}
            dimColor={!armed || (c.answer === 'trust' && readAll)}
          >
            [{c.key}] {c.label}
          </Text>
        ))}
      </Box>
    </Frame>
  );
}
