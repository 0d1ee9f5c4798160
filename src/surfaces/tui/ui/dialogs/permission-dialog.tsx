/**
 * Permission request: what the tool wants to do (the diff of an edit, the command of a shell
 * call), answered allow once / allow for session / deny. Keys are ignored for a moment after it
 * opens so a keystroke meant for the prompt cannot approve by accident (crush #2799).
 * @module
 */
import { Box, Text, useInput } from 'ink';
import { useEffect, useState } from 'react';
import type { PermissionDecision, PermissionPrompt } from '../../client';
import { diffFromDetails, renderDiff } from '../../render/diff';
import { Frame } from '../frame';

const CHOICES: { decision: PermissionDecision; key: string; label: string }[] = [
  { decision: 'allow_once', key: 'a', label: 'allow once' },
  { decision: 'allow_session', key: 's', label: 'allow for this session' },
  { decision: 'deny', key: 'd', label: 'deny' },
];

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
  const [armed, setArmed] = useState(armDelayMs <= 0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: re-arm for each new request
  useEffect(() => {
    setIndex(0);
    if (armDelayMs <= 0) return;
    setArmed(false);
    const timer = setTimeout(() => setArmed(true), armDelayMs);
    return () => clearTimeout(timer);
  }, [request.request_id, armDelayMs]);

  useInput(
    (input, key) => {
      if (!armed) return;
      const byKey = CHOICES.find((c) => c.key === input.toLowerCase());
      if (byKey) return onDecision(byKey.decision);
      if (key.escape) return onDecision('deny');
      if (key.leftArrow || key.upArrow) return setIndex((i) => (i + CHOICES.length - 1) % CHOICES.length);
      if (key.rightArrow || key.downArrow || key.tab) return setIndex((i) => (i + 1) % CHOICES.length);
      if (key.return) onDecision(CHOICES[index].decision);
    },
    { isActive: isActive !== false },
  );

  const details = request.details ?? {};
  const diff = diffFromDetails(details);
  const command = typeof details.command === 'string' ? details.command : undefined;
  const budget = Math.max(3, height - 7);
  return (
    <Frame
      title={`Permission: ${request.tool}${waiting ? ` (+${waiting} waiting)` : ''}`}
      color="yellow"
      hint={armed ? 'a allow once · s allow for session · d/esc deny · ←→ enter' : 'read the request…'}
    >
      <Text wrap="truncate-end">{request.title}</Text>
      {diff ? (
        <Box flexDirection="column">
          {renderDiff(diff, budget).map((line, i) => (
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
      <Box gap={2}>
        {CHOICES.map((c, i) => (
          <Text
            key={c.decision}
            inverse={armed && i === index}
            dimColor={!armed}
            color={c.decision === 'deny' ? 'red' : 'green'}
          >
            [{c.key}] {c.label}
          </Text>
        ))}
      </Box>
    </Frame>
  );
}
