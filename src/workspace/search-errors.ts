/**
 * What a search that ripgrep could not finish answers (./search.ts): the error or note naming
 * why, and the next step.
 * @module
 */
import { SvcError } from '../errors';
import type { RgResult } from './ripgrep';

/** The FIFOs found, in words: `sub/.gitignore`, or what to look for when none was found. */
function fifoNames(fifos: readonly string[]): string {
  return fifos.length
    ? `${fifos.length === 1 ? 'the FIFO' : 'one of the FIFOs'} ${fifos.join(', ')}`
    : 'a FIFO such as a .gitignore in a subdirectory';
}

const FIFO_NEXT =
  "remove it or make it a regular file (`find . -type p` lists them; ripgrep opens every directory's .gitignore, .ignore and .rgignore)";

/** A file walk ripgrep could not finish: it was waiting to open a FIFO where it reads a file. */
export function fifoError(fifos: readonly string[]): SvcError {
  return new SvcError(
    'conflict',
    `the file walk was stopped: ripgrep was waiting to open ${fifoNames(fifos)} (a named pipe, which waits for a writer that never comes); ${FIFO_NEXT}`,
    { details: { reason: 'fifo', fifos } },
  );
}

/** What a grep stopped at a FIFO tells the model about its results. */
export function fifoNote(fifos: readonly string[]): string {
  return `stopped early: ripgrep was waiting to open ${fifoNames(fifos)} (a named pipe); these are the results found until then, without the directory it was reading. To search all of it, ${FIFO_NEXT}`;
}

function rgError(stderr: string): SvcError {
  const message = stderr.trim().replace(/^rg: /, '') || 'ripgrep failed';
  if (/regex parse error|error parsing glob|unclosed|invalid/i.test(message)) {
    return new SvcError('invalid_input', `pattern: ${message}`);
  }
  return new SvcError('invalid_input', message);
}

/**
 * `result` when ripgrep finished (or svc stopped it), else refused: out of memory, naming the
 * likely cause (an ignore file or a file too large) and the next step; ended by a signal svc did
 * not send (its output, if any, is partial); an error (exit 2) with no output, as ripgrep put it.
 */
export function checkedRg(result: RgResult): RgResult {
  if (result.outOfMemory) {
    const cap = result.memoryLimitBytes
      ? `its ${Math.round(result.memoryLimitBytes / (1024 * 1024))} MiB memory limit`
      : 'the memory it could get';
    throw new SvcError(
      'conflict',
      `the search was stopped: ripgrep ran out of ${cap}. Most likely an ignore file it reads is oversized (a .gitignore, .ignore or .rgignore in any directory, or .git/info/exclude; \`find . -name '.*ignore' -size +10M\` lists them), or a file it searched is too large for a multiline search or holds a very long line. Remove or shrink that file, or narrow path or glob; to allow more, raise options.search.memory_limit_mb`,
      { details: { reason: 'memory', memory_limit_bytes: result.memoryLimitBytes } },
    );
  }
  if (result.signal)
    throw new SvcError(
      'internal',
      `the search was stopped: ripgrep ended on ${result.signal} before it finished (something outside svc killed it, or the machine ran out of memory); search again, and narrow path or glob if it happens again`,
      { details: { reason: 'signal', signal: result.signal } },
    );
  if (result.code === 2 && !result.stdout) throw rgError(result.stderr);
  return result;
}
