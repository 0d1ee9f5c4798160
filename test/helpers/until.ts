/**
 * Waits for a condition another process, node or connection makes true: `probe` every 20 ms until
 * it holds, or an error naming `what` after `timeoutMs`. Tests assert on what they waited for, not
 * on how long it took.
 */
export async function until(
  probe: () => boolean | Promise<boolean>,
  what = 'the condition',
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
