/**
 * Text for a child's stdin, handed over as a file rather than a pipe. Node's `'pipe'` stdio is a
 * socketpair, and a bash started with a socket as its stdin and no `SHLVL` in its environment (a
 * hook's minimal environment, a service started by systemd) takes itself for a command run by
 * sshd and sources `~/.bashrc`: 0.4 s a call where that file starts pyenv or nvm, and whatever
 * else it prints or does, which nobody asked for. A hook's own `bash script.sh` or `#!/bin/bash`
 * inherits the stdin it was given, so the shell svc starts being dash or `bash --norc` is not
 * enough. The file is unlinked at once: only the descriptor the child inherits keeps it.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A read descriptor of an unlinked file holding `text`, positioned at its start; the caller
 * passes it as the child's stdin and closes it once the child is spawned. `undefined` when no
 * file can be written (a full or read-only temp dir): the caller falls back to a pipe.
 */
export function stdinFile(text: string, dir: string = tmpdir()): number | undefined {
  const path = join(dir, `svc-stdin-${randomBytes(8).toString('hex')}`);
  try {
    writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
  } catch {
    return undefined;
  }
  try {
    return openSync(path, 'r');
  } catch {
    return undefined;
  } finally {
    rmSync(path, { force: true });
  }
}

/** Closes the parent's copy of a stdin descriptor (the child holds its own). */
export function closeStdinFile(fd: number | undefined): void {
  if (fd === undefined) return;
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}
