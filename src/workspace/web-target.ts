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
import { BlockList, isIP, type LookupFunction } from 'node:net';
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
  const blocked = await blockedTargetAddress(url, lookup);
  if (blocked) throw blockedTargetError(url, blocked);
}

/** The refusal of `url`, whose host is or resolves to `blocked`. */
export function blockedTargetError(url: URL, blocked: string): SvcError {
  return blockedAddressError(
    `url: ${url.href}`,
    url,
    blocked,
    "svc's web tools never fetch those (use bash with curl if you need it, where the sandbox and your permissions decide)",
  );
}

/**
 * The refusal of a request to `url`, whose host is or resolves to `blocked`: `subject` names the
 * URL as the message shows it, `after` says what svc does not do and what to do instead.
 */
export function blockedAddressError(subject: string, url: URL, blocked: string, after: string): SvcError {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new SvcError(
    'forbidden',
    `${subject} is ${blocked === host ? '' : `${host}, which resolves to `}${blocked}, a link-local or cloud metadata address; ${after}`,
    { details: { reason: 'blocked_address', address: blocked } },
  );
}

/**
 * One request that goes to no blocked address: its URL's host is checked before it is asked and
 * the connection checks what it connects to (`guardedDispatcher`); either refusal is
 * `refuse(address)`. Redirects are the caller's (`init.redirect`): each hop is a request of its own.
 * `url` is `input`'s, for a caller that has parsed it already.
 */
export async function guardedFetch(
  fetchImpl: typeof fetch,
  input: string | URL | Request,
  init: RequestInit | undefined,
  refuse: (blocked: string) => Error,
  lookup?: Lookup,
  url: URL = new URL(input instanceof Request ? input.url : String(input)),
): Promise<Response> {
  const before = await blockedTargetAddress(url, lookup);
  if (before) throw refuse(before);
  const dispatcher = await guardedDispatcher(lookup);
  try {
    return await fetchImpl(input, { ...init, dispatcher } as RequestInit);
  } catch (error) {
    const blocked = blockedAtConnect(error);
    if (blocked) throw refuse(blocked);
    throw error;
  }
}

/** The code of a connection refused by `guardedDispatcher`'s lookup; the address is on the error. */
const BLOCKED_AT_CONNECT = 'SVC_BLOCKED_ADDRESS';

/**
 * A dispatcher for Node's `fetch` (its `dispatcher` option) whose connections check the addresses
 * they are about to use. The check before a request resolves the name on its own; the connection
 * resolved it again, so a name that answered with a public address to the check and with
 * 169.254.169.254 a moment later (DNS rebinding, a TTL of 0) reached the metadata service. Here the
 * name is resolved once, at connect, and a blocked address among its answers refuses the
 * connection (code `BLOCKED_AT_CONNECT`); what connects is what was checked. An IP literal is not
 * looked up (the check before the request covers it). undici is loaded on the first fetch only.
 */
async function guardedDispatcher(lookup: Lookup = systemLookup): Promise<GuardedDispatcher> {
  const cached = lookup === systemLookup ? systemDispatcher : undefined;
  if (cached) return cached;
  const { Agent } = await import('undici');
  const agent = new Agent({
    connect: {
      lookup: ((hostname, options, callback) => {
        lookup(hostname).then(
          (entries) => {
            const blocked = entries.find((entry) => blockedAddress(entry.address));
            if (blocked) {
              const error = new Error(`${hostname} resolves to ${blocked.address}, a blocked address`);
              callback(Object.assign(error, { code: BLOCKED_AT_CONNECT, address: blocked.address }), '');
              return;
            }
            const found = entries.map((entry) => ({
              address: entry.address,
              family: isIP(entry.address) || 4,
            }));
            const first = found[0];
            if (!first)
              callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
            else if (options.all) callback(null, found);
            else callback(null, first.address, first.family);
          },
          (error: NodeJS.ErrnoException) => callback(error, ''),
        );
      }) satisfies LookupFunction,
    },
  });
  if (lookup === systemLookup) systemDispatcher = agent;
  return agent;
}

/** What `guardedDispatcher` gives: an undici dispatcher, opaque here (passed through `fetch`'s init). */
type GuardedDispatcher = object;

let systemDispatcher: GuardedDispatcher | undefined;

/** The blocked address a fetch failure was refused for at connect (`guardedDispatcher`), if it was. */
function blockedAtConnect(error: unknown): string | undefined {
  for (let cause = error, depth = 0; cause && depth < 5; depth++) {
    const own = cause as { code?: unknown; address?: unknown; cause?: unknown };
    if (own.code === BLOCKED_AT_CONNECT && typeof own.address === 'string') return own.address;
    cause = own.cause;
  }
  return undefined;
}
