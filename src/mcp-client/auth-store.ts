/**
 * Durable OAuth state of MCP servers (client registration, tokens, PKCE verifier, discovery),
 * one entry per `[mcp.<id>]`. Behind a small interface so the general credential store can take
 * it over; the default is a 0600 JSON file in the user config dir
 * (`$XDG_CONFIG_HOME/svc/mcp-auth.json`), written atomically.
 * @module
 */
import { chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { lazy } from '../util/lazy';
import { makeDirs } from '../util/make-dirs';

/** What the SDK hands us, stored unchanged (it stamps `issuer` and reads it back). */
export interface McpAuthEntry {
  /** The server URL the entry was made for; another URL means the entry does not apply. */
  server_url: string;
  client_information?: Record<string, unknown>;
  tokens?: Record<string, unknown>;
  /** Unix ms when the tokens were saved (expires_in counts from there). */
  tokens_saved_at?: number;
  code_verifier?: string;
  discovery?: Record<string, unknown>;
  /** The loopback redirect URI the client was registered with. */
  redirect_uri?: string;
}

export interface McpAuthStore {
  /** Where the entries live, for messages (`~/.config/svc/mcp-auth.json`). */
  readonly location: string;
  get(id: string): McpAuthEntry | undefined;
  set(id: string, entry: McpAuthEntry): void;
  /** Forget a server; true when something was removed. */
  delete(id: string): boolean;
}

// Lenient: a file written by another version keeps working; unknown keys are kept.
const fileSchema = lazy(() =>
  z.looseObject({
    version: z.number().optional(),
    servers: z.record(z.string(), z.looseObject({ server_url: z.string() })).optional(),
  }),
);

export function createFileAuthStore(path: string): McpAuthStore {
  const read = (): Record<string, McpAuthEntry> => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      return {};
    }
    try {
      const parsed = fileSchema().safeParse(JSON.parse(text));
      return parsed.success ? ((parsed.data.servers ?? {}) as Record<string, McpAuthEntry>) : {};
    } catch {
      // A corrupt file is treated as empty and replaced on the next save; it only holds
      // credentials that a new `svc mcp auth` recreates.
      return {};
    }
  };
  const write = (servers: Record<string, McpAuthEntry>) => {
    makeDirs(dirname(path), 0o700);
    const temp = `${path}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify({ version: 1, servers }, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, path);
  };
  return {
    location: path,
    get: (id) => read()[id],
    set(id, entry) {
      write({ ...read(), [id]: entry });
    },
    delete(id) {
      const servers = read();
      if (!(id in servers)) return false;
      delete servers[id];
      write(servers);
      return true;
    },
  };
}

/** An in-memory store (tests, or a process that must not persist). */
export function createMemoryAuthStore(): McpAuthStore {
  const entries = new Map<string, McpAuthEntry>();
  return {
    location: 'memory',
    get: (id) => (entries.has(id) ? structuredClone(entries.get(id)) : undefined),
    set: (id, entry) => {
      entries.set(id, structuredClone(entry));
    },
    delete: (id) => entries.delete(id),
  };
}
