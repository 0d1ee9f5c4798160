/**
 * Which dialog is open (`useDialog`, kept in a ref too so a key of the same burst sees it), and
 * the onboarding check at start that opens one when no provider is ready.
 * @module
 */
import { type MutableRefObject, useCallback, useEffect, useRef, useState } from 'react';
import type { SlashCommand } from '../commands';
import type { ChatController } from '../state/chat-controller';

export type Dialog =
  | { kind: 'help' }
  | { kind: 'palette' }
  | { kind: 'sessions' }
  | { kind: 'model' }
  | { kind: 'providers' }
  | { kind: 'onboarding' }
  | { kind: 'readout'; command: SlashCommand; args: string }
  | { kind: 'dashboard' }
  | { kind: 'pack' }
  | { kind: 'undo' }
  | { kind: 'why' };

export type DialogSetter = (
  next: Dialog | undefined | ((current: Dialog | undefined) => Dialog | undefined),
) => void;

export function useDialog(initial: Dialog | undefined): {
  dialog: Dialog | undefined;
  dialogRef: MutableRefObject<Dialog | undefined>;
  setDialog: DialogSetter;
} {
  const [dialog, setDialogState] = useState<Dialog | undefined>(initial);
  const dialogRef = useRef<Dialog | undefined>(initial);
  const setDialog = useCallback<DialogSetter>((next) => {
    const value = typeof next === 'function' ? next(dialogRef.current) : next;
    dialogRef.current = value;
    setDialogState(value);
  }, []);
  return { dialog, dialogRef, setDialog };
}

/** Check provider readiness at start and open onboarding when none is ready. */
export function useOnboarding(
  controller: ChatController,
  enabled: boolean | undefined,
  setDialog: DialogSetter,
) {
  useEffect(() => {
    if (!enabled) return;
    const client = controller.client;
    client.providerStatus().then(
      async (rows) => {
        if (rows.some((r) => r.ready)) return;
        // A local model server on loopback needs no setup: svc run and the TUI use it as is.
        if (await client.localModel?.().catch(() => undefined)) return;
        setDialog((d) => d ?? { kind: 'onboarding' });
      },
      () => setDialog((d) => d ?? { kind: 'onboarding' }),
    );
  }, [controller, enabled, setDialog]);
}
