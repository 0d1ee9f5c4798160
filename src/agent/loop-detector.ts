/**
 * Loop detection: the same tool call (same tool, same input) giving the same result
 * `options.loop_detection.max_repeats` times in a row means the run is stuck. Including the
 * result keeps polling (job_output while a job still prints) from counting as a loop.
 * @module
 */
export interface LoopVerdict {
  tool: string;
  repeats: number;
}

export function createLoopDetector(maxRepeats: number) {
  let last: string | undefined;
  let repeats = 0;
  /** The signature `wouldStop` made last: `record` of the same call reuses it. */
  let peeked: { tool: string; input: unknown; output: string; signature: string } | undefined;
  const signatureOf = (tool: string, input: unknown, output: string): string => {
    const p = peeked;
    if (p && p.tool === tool && p.input === input && p.output === output) return p.signature;
    // A plain string: comparing it costs less than hashing it (outputs are capped at 100k chars).
    return `${tool}\u0000${stableJson(input)}\u0000${output}`;
  };
  return {
    /** Record a finished call; returns a verdict when the limit is reached. */
    record(tool: string, input: unknown, output: string): LoopVerdict | undefined {
      const signature = signatureOf(tool, input, output);
      peeked = undefined;
      repeats = signature === last ? repeats + 1 : 1;
      last = signature;
      return repeats >= maxRepeats ? { tool, repeats } : undefined;
    },
    /** Whether `record` of this call would answer a verdict now (nothing recorded). */
    wouldStop(tool: string, input: unknown, output: string): boolean {
      const signature = signatureOf(tool, input, output);
      peeked = { tool, input, output, signature };
      return (signature === last ? repeats + 1 : 1) >= maxRepeats;
    },
  };
}

export function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
}
