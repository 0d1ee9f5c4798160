/**
 * Where the `fetch` and `download` tools may not go: link-local addresses, where clouds serve
 * instance metadata and credentials (169.254.169.254 on AWS, GCP and Azure, fd00:ec2::254,
 * 100.100.100.200 on Alibaba), and the unspecified 0.0.0.0/8. A model told by a page or a file to
 * fetch them would read the machine's cloud credentials (stop 81, found by probing: `fetch` had no
 * address filter). Loopback and private networks stay reachable: a dev server on localhost is
 * what users ask the agent to look at. The check runs on every hop of a redirect, on the
 * addresses the host name resolves to.
 * @module
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { SvcError } from '../errors';

const BLOCKED = new BlockList();
BLOCKED.addSubnet('169.254.0.0', 16, 'ipv4');
BLOCKED.addSubnet('0.0.0.0', 8, 'ipv4');
BLOCKED.addAddress('100.100.100.200', 'ipv4');
BLOCKED.addSubnet('fe80::', 10, 'ipv6');
BLOCKED.addAddress('fd00:ec2::254', 'ipv6');

export type Lookup = (host: string) => Promise<{ address: string }[]>;

const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Whether an address is one the tools never fetch from. */
export function blockedAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return BLOCKED.check(mapped, 'ipv4');
  const family = isIP(address);
  return family !== 0 && BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The blocked address `url`'s host is, or resolves to, if any. A name that does not resolve
 * passes (fetch names the error). Also the MCP client's rule for OAuth endpoints.
 */
export async function blockedTargetAddress(
  url: URL,
  lookup: Lookup = systemLookup,
): Promise<string | undefined> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host)).map((entry) => entry.address);
    } catch {
      return undefined;
    }
  }
  return addresses.find(blockedAddress);
}

/** Refuses `url` when its host is, or resolves to, a blocked address. A name that does not resolve passes (fetch names the error). */
export async function refuseBlockedTarget(url: URL, lookup: Lookup = systemLookup): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const blocked = await blockedTargetAddress(url, lookup);
  if (blocked)
    throw new SvcError(
      'forbidden',
      `url: ${url.href} is ${blocked === host ? '' : `${host}, which resolves to `}${blocked}, a link-local or cloud metadata address; svc's web tools never fetch those (use bash with curl if you need it, where the sandbox and your permissions decide)`,
      { details: { reason: 'blocked_address', address: blocked } },
    );
}
