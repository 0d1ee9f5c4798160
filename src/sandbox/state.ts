/**
 * What the sandbox is doing now and why: active, fallback (auto mode without a usable
 * bubblewrap: parse-based rules only), off, or unavailable (mode bwrap without one: commands
 * fail), with the exact install command when installing is the fix.
 * @module
 */
import type { BwrapProbe } from './bwrap';
import { installCommand, namespaceHint } from './install-hint';

export type SandboxState = 'active' | 'fallback' | 'off' | 'unavailable';

export interface StateNow {
  state: SandboxState;
  reason: string;
  install: string | null;
  bwrap: BwrapProbe;
}

export function sandboxState(
  mode: 'auto' | 'bwrap' | 'off',
  platform: NodeJS.Platform,
  probe: () => BwrapProbe,
): StateNow {
  if (mode === 'off')
    return { state: 'off', reason: 'options.sandbox.mode is "off"', install: null, bwrap: probe() };
  if (platform !== 'linux' && mode === 'auto') {
    return {
      state: 'fallback',
      reason: `no OS sandbox on ${platform} (svc sandboxes commands with bubblewrap on Linux)`,
      install: null,
      bwrap: unprobed(`bubblewrap runs on Linux only (this is ${platform})`),
    };
  }
  const bwrap = probe();
  if (bwrap.usable)
    return { state: 'active', reason: `bubblewrap ${bwrap.version ?? ''}`.trim(), install: null, bwrap };
  const install = bwrap.path ? null : installCommand();
  const reason = bwrap.path ? `${bwrap.error}; ${namespaceHint()}` : (bwrap.error ?? 'bwrap cannot run');
  return { state: mode === 'bwrap' ? 'unavailable' : 'fallback', reason, install, bwrap };
}

export function message(
  now: { state: SandboxState; reason: string; install: string | null },
  network: string,
): string {
  switch (now.state) {
    case 'off':
      return 'sandbox off: bash commands run unsandboxed under the parse-based rules (remove options.sandbox.mode = "off" to sandbox them)';
    case 'active':
      return `bash commands run inside ${now.reason} (workspace read-write, the rest read-only, private /tmp, credentials and svc data hidden, network ${network})`;
    case 'fallback':
      return `sandbox fallback: ${now.reason}; bash commands run unsandboxed under the parse-based rules${now.install ? `. Install bubblewrap: ${now.install}` : ''}`;
    case 'unavailable':
      return `sandbox unavailable: bash calls fail until it can run (${now.reason})`;
    default: {
      const never: never = now.state;
      return never;
    }
  }
}

/** The one line said when commands run without the OS sandbox in auto mode. */
export function fallbackNotice(now: StateNow): string | undefined {
  if (now.state !== 'fallback') return undefined;
  return (
    `no OS sandbox for commands: ${now.reason}; bash runs under svc's parse-based rules only` +
    (now.install ? `. Install bubblewrap: ${now.install}` : '') +
    ' (set options.sandbox.mode = "off" to silence this)'
  );
}

/** Why no OS sandbox contains commands now and how to get one (for refusals). */
export function missingSandbox(now: StateNow): string {
  if (now.state === 'active') return 'the OS sandbox contains it';
  if (now.state === 'off') return 'no OS sandbox contains it (options.sandbox.mode = "off")';
  return `no OS sandbox contains it (${now.reason}${now.install ? `; install it: ${now.install}` : ''})`;
}

function unprobed(error: string): BwrapProbe {
  return { path: null, version: null, usable: false, proc: null, error };
}
