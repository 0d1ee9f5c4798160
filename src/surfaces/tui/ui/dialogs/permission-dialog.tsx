/**
 * Permission request: what the tool wants to do (the diff of an edit, the command of a shell
 * call, the details such as an MCP call's arguments), answered allow once / allow for session /
 * deny. Keys are ignored for a moment after it opens so a keystroke meant for the prompt cannot
 * approve by accident (crush #2799). A command or details longer than the dialog open on their
 * first line and scroll with pgup/pgdn; the allow answers wait until the last line has been on
 * screen (deny does not), so nothing is approved unread.
 * @module
 */
import { Box, Text, useStdout } from 'ink';
import { useEffect, useMemo, useRef, useState } from 'react';
import { decisionForKey, PERMISSION_KEYS } from '../../../../permissions/keys';
import { visibleControls } from '../../../../util/terminal-text';
import type { PermissionDecision, PermissionPrompt } from '../../client';
import { diffFromDetails } from '../../render/diff';
import { diffWindow } from '../../render/diff-window';
import { requestLines, textWindow, wrapRows } from '../../render/text-window';
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
  // The request whose command (or details) has been shown to its last line.
  const [readFor, setReadFor] = useState<string | undefined>();
  const { stdout } = useStdout();
  const columns = stdout.columns || 80;
  const narrow = columns < NARROW;
  useEffect(() => {
    setIndex(0);
    setScroll(0);
    if (armDelayMs <= 0) return;
    const timer = setTimeout(() => setArmedFor(request.request_id), armDelayMs);
    return () => clearTimeout(timer);
  }, [request.request_id, armDelayMs]);

  const details = request.details ?? {};
  const diff = diffFromDetails(details);
  // The frame's border and padding take four columns.
  const rows = useMemo(() => {
    const lines = diff ? undefined : requestLines(request.details ?? {});
    return lines ? wrapRows(lines, Math.max(10, columns - 4)) : undefined;
  }, [diff, request.details, columns]);
  // The frame's border (2), its title and hint rows, the request title and the choices: 6 rows.
  const budget = Math.max(2, height - 6);
  const view = diff ? diffWindow(diff, budget, scroll) : undefined;
  const text = rows ? textWindow(rows, budget, scroll) : undefined;
  const read = !text || text.atEnd || readFor === request.request_id;
  useEffect(() => {
    if (text?.atEnd) setReadFor(request.request_id);
  }, [text?.atEnd, request.request_id]);
  const allows = (decision: PermissionDecision) => decision === 'deny' || read;

  // The choice a key moves to, read by the next key of the same read (↓ then enter at once reach
  // the same render's handler; useLatestInput does not change that).
  const choice = useRef(index);
  choice.current = index;
  // A key right after the armed hint appears answers (use-latest-input.ts).
  useLatestInput(
    (input, key) => {
      // Scrolling is always safe, armed or not.
      if (key.pageDown || key.pageUp) {
        const step = Math.max(1, budget - 1) * (key.pageDown ? 1 : -1);
        const max = text ? text.maxOffset : Number.POSITIVE_INFINITY;
        return setScroll((s) => Math.min(max, Math.max(0, s + step)));
      }
      if (!armed) return;
      const byKey = input.length === 1 ? decisionForKey(input) : undefined;
      if (byKey) return allows(byKey) ? onDecision(byKey) : undefined;
      if (key.escape) return onDecision('deny');
      const move = (by: number) => {
        choice.current = (choice.current + CHOICES.length + by) % CHOICES.length;
        setIndex(choice.current);
      };
      if (key.leftArrow || key.upArrow) return move(-1);
      if (key.rightArrow || key.downArrow || key.tab) return move(1);
      const chosen = CHOICES[choice.current].decision;
      if (key.return && allows(chosen)) onDecision(chosen);
    },
    { isActive: isActive !== false },
  );

  const scrolls = view?.scrolls || text?.scrolls;
  return (
    <Frame
      title={`Permission: ${visibleControls(request.tool)}${waiting ? ` (+${waiting} waiting)` : ''}`}
      color="yellow"
      hint={
        !armed
          ? 'read the request…'
          : !read
            ? 'pgdn: read to the end to allow · n/esc deny'
            : narrow
              ? 'esc deny · ←→ enter'
              : `${KEY_HINT} · esc deny · ←→ enter${scrolls ? ' · pgup pgdn' : ''}`
      }
    >
      <Text wrap="truncate-end">{visibleControls(request.title)}</Text>
      <WindowLines
        lines={(view ?? text)?.lines ?? [' ']}
        color={diff ? undefined : typeof details.command === 'string' ? 'magenta' : 'gray'}
      />
      <Box gap={narrow ? 1 : 2}>
        {CHOICES.map((c, i) => (
          <Text
            key={c.decision}
            inverse={armed && i === index}
            dimColor={!armed || !allows(c.decision)}
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

/** The window of the diff, the command or the details: one row each, none wider than the frame. */
function WindowLines({ lines, color }: { lines: string[]; color?: string }) {
  return (
    <Box flexDirection="column">
      {lines.map((line, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the window's lines are positional
        <Text key={i} color={color} wrap="truncate-end">
          {line}
        </Text>
      ))}
    </Box>
  );
}
