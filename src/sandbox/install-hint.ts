/**
 * The exact command that installs bubblewrap on this machine, read from /etc/os-release (ID and
 * ID_LIKE), and what to do when it is installed but cannot create a namespace.
 * @module
 */
import { readFileSync } from 'node:fs';

const BY_DISTRO: readonly [RegExp, string][] = [
  [/\b(debian|ubuntu|linuxmint|pop|raspbian|kali)\b/, 'apt-get install bubblewrap'],
  [/\b(fedora|rhel|centos|rocky|almalinux|amzn|ol)\b/, 'dnf install bubblewrap'],
  [/\b(arch|manjaro|endeavouros)\b/, 'pacman -S bubblewrap'],
  [/\b(opensuse|suse|sles)\b/, 'zypper install bubblewrap'],
  [/\balpine\b/, 'apk add bubblewrap'],
  [/\b(gentoo)\b/, 'emerge sys-apps/bubblewrap'],
  [/\b(void)\b/, 'xbps-install bubblewrap'],
  [/\b(nixos)\b/, 'nix-env -iA nixpkgs.bubblewrap'],
];

/** `apt-get install bubblewrap` and the like; a generic sentence where the distribution is unknown. */
export function installCommand(osRelease = readOsRelease()): string {
  const ids = `${osRelease.ID ?? ''} ${osRelease.ID_LIKE ?? ''}`.toLowerCase();
  for (const [pattern, command] of BY_DISTRO) if (pattern.test(ids)) return command;
  return 'apt-get install bubblewrap (Debian, Ubuntu) or dnf install bubblewrap (Fedora, RHEL)';
}

/** What to do when bwrap is installed but fails to create a sandbox. */
export function namespaceHint(): string {
  return (
    'unprivileged user namespaces may be disabled: enable them (sysctl kernel.unprivileged_userns_clone=1; ' +
    'on Ubuntu 24.04+ also kernel.apparmor_restrict_unprivileged_userns=0), or run svc where namespaces are allowed ' +
    '(a container needs --privileged or a seccomp profile that permits them)'
  );
}

function readOsRelease(): Record<string, string> {
  try {
    const out: Record<string, string> = {};
    for (const line of readFileSync('/etc/os-release', 'utf8').split('\n')) {
      const match = /^([A-Z_]+)=(.*)$/.exec(line.trim());
      if (match) out[match[1]] = match[2].replace(/^"|"$/g, '');
    }
    return out;
  } catch {
    return {};
  }
}
