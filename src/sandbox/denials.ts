/**
 * Denials the model understands (issue 15, item 4). A command the sandbox stopped fails with an
 * ordinary error (`Read-only file system`, `No such file or directory`, `Could not resolve
 * host`) that a model reads as a broken machine or a network outage. `detectDenials` finds those
 * outcomes in a sandboxed command's output and names what was blocked, why, and how the user can
 * allow it; the shell adds the sentences to the tool result and a `sandbox_denied` ledger event.
 * @module
 */
import { resolve } from 'node:path';
import { type ProtectedPath, realOf, within } from './protected';

export type DenialKind = 'write_outside_workspace' | 'path_denied' | 'network_off' | 'unverified_write';

export interface Denial {
  kind: DenialKind;
  /** `sandbox`: the OS sandbox stopped it while it ran; `rules`: svc refused it before it ran. */
  source: 'sandbox' | 'rules';
  /** The path or what was reached for, when known. */
  target: string | null;
  /** One sentence the model reads: what, why, how the user allows it. */
  message: string;
}

export interface DenialContext {
  workspace: string;
  cwd: string;
  network: 'none' | 'host';
  protectedList: readonly ProtectedPath[];
}

const EROFS = /read-only file system|\bEROFS\b/i;
const EACCES = /permission denied|\bEACCES\b|\bEPERM\b/i;
const ENOENT = /no such file or directory|\bENOENT\b|cannot access/i;
const NETWORK =
  /could not resolve host|temporary failure in name resolution|name or service not known|getaddrinfo (EAI_AGAIN|ENOTFOUND)|\bEAI_AGAIN\b|network is unreachable|\bENETUNREACH\b|no address associated with hostname|nodename nor servname|dial tcp: lookup|failed to establish a new connection|connection refused|\bECONNREFUSED\b|unable to access 'https?:/i;

/** Denials in the output of a command that ran inside the sandbox (at most one per kind and target). */
export function detectDenials(output: string, context: DenialContext): Denial[] {
  const found = new Map<string, Denial>();
  const add = (denial: Denial) => {
    const key = `${denial.kind}:${denial.target ?? ''}`;
    if (!found.has(key) && found.size < 5) found.set(key, denial);
  };
  for (const line of output.split('\n').slice(0, 2000)) {
    if (line.length > 2000) continue;
    if (context.network === 'none' && NETWORK.test(line)) {
      add(networkDenial());
      continue;
    }
    const errno = EROFS.test(line)
      ? 'erofs'
      : EACCES.test(line)
        ? 'eacces'
        : ENOENT.test(line)
          ? 'enoent'
          : null;
    if (!errno) continue;
    for (const raw of pathsIn(line)) {
      const abs = realOf(resolve(context.cwd, raw));
      const hidden = context.protectedList.find((p) => within(p.path, abs));
      if (hidden) {
        add(pathDenial(abs, hidden));
        break;
      }
      if (errno === 'erofs' && !within(context.workspace, abs) && !within('/tmp', abs)) {
        add(writeDenial(abs));
        break;
      }
    }
  }
  return [...found.values()];
}

export function networkDenial(): Denial {
  return {
    kind: 'network_off',
    source: 'sandbox',
    target: null,
    message:
      'sandbox: the network is off for commands (options.sandbox.network = "none"), so this is not an outage: a download, a package install or a server on this machine cannot be reached from the sandbox. The user can allow it by setting options.sandbox.network = "host" in svc.toml; otherwise work offline.',
  };
}

export function writeDenial(abs: string, source: Denial['source'] = 'sandbox'): Denial {
  return {
    kind: 'write_outside_workspace',
    source,
    target: abs,
    message: `sandbox: writing ${abs} was blocked: commands may only write inside the workspace (and a private /tmp). The user can allow that directory with options.sandbox.allow_write in svc.toml; otherwise write inside the workspace.`,
  };
}

export function pathDenial(abs: string, hidden: ProtectedPath, source: Denial['source'] = 'sandbox'): Denial {
  const allow =
    hidden.kind === 'deny_read'
      ? `The user can allow it with options.sandbox.allow_read = ["${hidden.label}"] in svc.toml (or remove it from deny_read).`
      : 'No setting allows it: do not try to read it another way.';
  return {
    kind: 'path_denied',
    source,
    target: abs,
    message: `sandbox: ${abs} is not available to commands: it is in ${hidden.label} (${hidden.why}), which svc keeps out of reach on purpose, so it looks missing or unreadable. ${allow}`,
  };
}

/** Candidate paths in an error line: the one the error names first, then quoted ones, then path-like words. */
function pathsIn(line: string): string[] {
  const out: string[] = [];
  // `bash: line 3: /x: Read-only file system`, `touch: cannot touch '/x': Read-only file system`.
  const named =
    /['"‘`]?([^\s:'"‘’`]+)['"’`]?:\s*(?:read-only file system|permission denied|no such file)/i.exec(line);
  if (named) out.push(named[1]);
  // `OSError: [Errno 30] Read-only file system: '/x'`, `EROFS: read-only file system, open '/x'`.
  for (const match of line.matchAll(/['"‘’`]([^'"‘’`\n]+)['"‘’`]/g)) out.push(match[1]);
  for (const match of line.matchAll(/(?:^|[\s:,=(])((?:~|\.{1,2})?\/[^\s:'",()]+|[\w.-]+\/[^\s:'",()]*)/g)) {
    out.push(match[1]);
  }
  return out.filter((p) => p.length > 0 && !/^https?:/.test(p));
}
