/**
 * Permission request: what the tool wants to do (the diff of an edit, the command of a shell
 * call), answered allow once / allow for session / deny. Keys are ignored for a moment after it
 * opens so a keystroke meant for the prompt cannot approve by accident (crush #2799).
 * @module
 */
import { Box, Text, useStdout } from 'ink';
import { useEffect, useRef, useState } from 'react';
import { decisionForKey, PERMISSION_KEYS } from '../../../../permissions/keys';
import type { PermissionDecision, PermissionPrompt } from '../../client';
import { diffFromDetails } from '../../render/diff';
import { diffWindow } from '../../render/diff-window';
import { Frame } from '../frame';
import { useLatestInput } from '../use-latest-input';

/** The keys every surface answers with (src/permissions/keys.ts). */
const CHOICES = PERMISSION_KEYS;
const KEY_HINT = `press ${CHOICES.map((c) => c.key).join(', ')}`;
/** Below this width the choices and the hint use their short forms (one row each). */
const NARROW = 60;

export interface PermissionDialogProps {
  request: PermissionPrompt;
  /** More requests waiting after this one. */
  waiting?: number;
  height: number;
  isActive?: boolean;
  armDelayMs?: number;
  onDecision(decision: PermissionDecision): void;
}

export function PermissionDialog({
  request,
  waiting = 0,
  height,
  isActive,
  armDelayMs = 250,
  onDecision,
}: PermissionDialogProps) {
  const [index, setIndex] = useState(0);
  // Armed for one request: a new request is unarmed from its first render, not from the effect
  // that starts its timer.
  const [armedFor, setArmedFor] = useState<string | undefined>();
  const armed = armDelayMs <= 0 || armedFor === request.request_id;
  const [scroll, setScroll] = useState(0);
  const { stdout } = useStdout();
  const narrow = (stdout.columns || 80) < NARROW;
  useEffect(() => {
    setIndex(0);
    setScroll(0);
    if (armDelayMs <= 0) return;
    const timer = setTimeout(() => setArmedFor(request.request_id), armDelayMs);
    return () => clearTimeout(timer);
  }, [request.request_id, armDelayMs]);

  // The choice a key moves to, read by the next key of the same read (↓ then enter at once reach
  // the same render's handler; useLatestInput does not change that).
  const choice = useRef(index);
  choice.current = index;
  // A key right after the armed hint appears answers (use-latest-input.ts).
  useLatestInput(
    (input, key) => {
      // Scrolling the diff is always safe, armed or not.
      if (key.pageDown || key.pageUp) {
        const step = Math.max(1, budget - 1) * (key.pageDown ? 1 : -1);
        return setScroll((s) => Math.max(0, s + step));
      }
      if (!armed) return;
      const byKey = input.length === 1 ? decisionForKey(input) : undefined;
      if (byKey) return onDecision(byKey);
      if (key.escape) return onDecision('deny');
      const move = (by: number) => {
        choice.current = (choice.current + CHOICES.length + by) % CHOICES.length;
        setIndex(choice.current);
      };
      if (key.leftArrow || key.upArrow) return move(-1);
      if (key.rightArrow || key.downArrow || key.tab) return move(1);
      if (key.return) onDecision(CHOICES[choice.current].decision);
    },
    { isActive: isActive !== false },
  );

  const details = request.details ?? {};
  const diff = diffFromDetails(details);
  const command = typeof details.command === 'string' ? details.command : undefined;
  // The frame's border (2), its title and hint rows, the request title and the choices: 6 rows.
  const budget = Math.max(2, height - 6);
  const view = diff ? diffWindow(diff, budget, scroll) : undefined;
  return (
    <Frame
      title={`Permission: ${request.tool}${waiting ? ` (+${waiting} waiting)` : ''}`}
      color="yellow"
      hint={
        armed
          ? narrow
            ? 'esc deny · ←→ enter'
            : `${KEY_HINT} · esc deny · ←→ enter${view?.scrolls ? ' · pgup pgdn' : ''}`
          : 'read the request…'
      }
    >
      <Text wrap="truncate-end">{request.title}</Text>
      {view ? (
        <Box flexDirection="column">
          {view.lines.map((line, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: diff lines are positional
            <Text key={i} wrap="truncate-end">
              {line}
            </Text>
          ))}
        </Box>
      ) : command ? (
        <Text color="magenta" wrap="wrap">
          $ {command}
        </Text>
      ) : (
        <Text dimColor wrap="truncate-end">
          {Object.entries(details)
            .filter(([, v]) => typeof v !== 'object')
            .map(([k, v]) => `${k}: ${String(v)}`)
            .join('  ') || ' '}
        </Text>
      )}
      <Box gap={narrow ? 1 : 2}>
        {CHOICES.map((c, i) => (
          <Text
            key={c.decision}
            inverse={armed && i === index}
            dimColor={!armed}
            color={c.decision === 'deny' ? 'red' : 'green'}
            wrap="truncate-end"
          >
            [{c.key}] {narrow ? c.short : c.label}
          </Text>
        ))}
      </Box>
    </Frame>
  );
}
