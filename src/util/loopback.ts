/**
 * Loopback names and URLs, one rule for every caller: a provider's key that may be omitted, a
 * workspace setting that sends data nowhere but this machine, an address a no-token server may
 * bind, a `Host` header it answers, an OAuth endpoint that may be plain `http:`.
 * @module
 */

const NAMES = new Set(['localhost', 'ip6-localhost', '::1', '0:0:0:0:0:0:0:1']);
const V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
/** `::ffff:127.0.0.1` as written, and as `URL` normalizes it (`::ffff:7f00:1`). */
const MAPPED_HEX = /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/;

/**
 * A loopback host name: localhost, ip6-localhost, 127.0.0.0/8, `::1`, IPv4-mapped 127.x; with
 * `subdomains`, `*.localhost` too (RFC 6761). Brackets around an IPv6 address are ignored; a port
 * is not accepted. `*.localhost` is left out by default: svc's own connections and binds resolve
 * names through the system resolver, which may send them to DNS; browsers resolve those names to
 * loopback themselves, so a `Host` header check takes them.
 */
export function isLoopbackHostname(hostname: string, { subdomains = false } = {}): boolean {
  const h = hostname
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (NAMES.has(h) || (subdomains && h.endsWith('.localhost'))) return true;
  if (h.startsWith('::ffff:')) return V4.test(h.slice(7)) || MAPPED_HEX.test(h);
  return V4.test(h);
}

/** A URL whose host is loopback (see {@link isLoopbackHostname}, no `*.localhost`); anything unparseable is not. */
export function isLoopbackUrl(url: string | undefined): boolean {
  if (!url) return false;
  try {
    return isLoopbackHostname(new URL(url).hostname);
  } catch {
    return false;
  }
}
