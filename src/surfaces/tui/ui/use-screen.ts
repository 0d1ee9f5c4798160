/**
 * The terminal the TUI draws on: its size (followed on resize), and the epoch of the printed
 * transcript. Printed items (Ink <Static>) are not redrawn, so a session switch, a width change or
 * a display setting clears the screen and bumps the epoch to print them again from the top.
 * @module
 */
import { useStdout } from 'ink';
import { useCallback, useEffect, useRef, useState } from 'react';

export interface Screen {
  size: { columns: number; rows: number };
  /** The key of the printed transcript: a new epoch prints it again. */
  epoch: number;
  /** Clear the screen and print the transcript again. */
  reprint(): void;
}

/** `store` is the transcript store: a new one (session switch) reprints from the top. */
export function useScreen(store: unknown, clearOnRedraw: boolean | undefined): Screen {
  const { stdout, write } = useStdout();
  // Through Ink's own writer: it erases its live output, writes this, and draws the live output
  // again, so the screen is never left blank (a raw write would leave Ink thinking it is shown).
  const clearScreen = useCallback(() => {
    if (clearOnRedraw) write('\x1b[2J\x1b[3J\x1b[H');
  }, [clearOnRedraw, write]);
  const mounted = useRef(false);
  const [size, setSize] = useState({ columns: stdout.columns || 80, rows: stdout.rows || 24 });
  const [epoch, setEpoch] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: runs for each new store
  useEffect(() => {
    // A new store (session switch) re-prints the transcript from the top; the first one is
    // printed by the first render.
    if (!mounted.current) {
      mounted.current = true;
      return;
    }
    clearScreen();
    setEpoch((e) => e + 1);
  }, [store, clearScreen]);
  useEffect(() => {
    let timer: NodeJS.Timeout | undefined;
    const onResize = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        setSize((old) => {
          const next = { columns: stdout.columns || 80, rows: stdout.rows || 24 };
          if (next.columns !== old.columns) {
            // Printed lines were wrapped for the old width: clear and print them again. A raw
            // write, not Ink's writer: that one would draw the old-width frame again, which wraps
            // at the new width into more lines than Ink erases next, leaving its top rows on screen.
            // The next frame differs (its rules and status line follow the width), so Ink draws it.
            if (clearOnRedraw) stdout.write('\x1b[2J\x1b[3J\x1b[H');
            setEpoch((e) => e + 1);
          }
          return next;
        });
      }, 80);
    };
    stdout.on('resize', onResize);
    return () => {
      clearTimeout(timer);
      stdout.off('resize', onResize);
    };
  }, [stdout, clearOnRedraw]);

  const reprint = useCallback(() => {
    clearScreen();
    setEpoch((e) => e + 1);
  }, [clearScreen]);
  return { size, epoch, reprint };
}
