/**
 * The contract suites' test bodies: open a fixture (a repository on one backend), run the body on
 * the part of it the suite tests, and close it even when the body fails.
 */
export function withOpened<F extends { close(): Promise<void> }, T>(
  open: () => Promise<F>,
  pick: (fixture: F) => T,
) {
  return (fn: (value: T) => Promise<void>) => async () => {
    const fixture = await open();
    try {
      await fn(pick(fixture));
    } finally {
      await fixture.close();
    }
  };
}
