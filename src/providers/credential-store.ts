/**
 * The durable credential store behind `keychain:<provider>` and `svc auth`: a JSON file under the
 * user's config dir (`$XDG_CONFIG_HOME/svc/credentials.json`, mode 0600) by default; the OS keyring
 * (@napi-rs/keyring) only when `options.credential_store = "keyring"`, falling back to the file
 * when the keyring cannot be used (headless machines, no session keyring).
 * @module
 */
import { chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { globalConfigDir } from '../config/load';
import { SvcError } from '../errors';
import { makeDirs } from '../util/make-dirs';

export type CredentialKind = 'api_key' | 'bearer' | 'oauth';

export interface StoredCredential {
  kind: CredentialKind;
  /** An API key or bearer token (kind api_key / bearer). */
  value?: string;
  /** OAuth: short-lived access token. */
  access?: string;
  /** OAuth: long-lived refresh token (or the upstream OAuth token a platform exchanges). */
  refresh?: string;
  /** OAuth: access token expiry, epoch ms. */
  expires_at?: number;
  account?: string;
  /** What stored it: `svc auth openrouter`, `svc auth bedrock token`. */
  stored_by: string;
  stored_at: string;
}

export interface StoreStatus {
  backend: 'file' | 'keyring';
  requested: 'file' | 'keyring';
  path: string;
  exists: boolean;
  /** Set when the keyring was requested but could not be used (then the file is used). */
  keyring_error?: string;
  mode?: string;
}

export interface CredentialStore {
  get(provider: string): StoredCredential | undefined;
  set(provider: string, credential: StoredCredential): void;
  delete(provider: string): boolean;
  list(): string[];
  status(): StoreStatus;
  /** True when credentials survive this process (always, for file and keyring). */
  durable(): boolean;
  /**
   * What the stored credentials are now, for one who keeps what it read of them: the file's
   * identity (one stat: inode, size, times; another after any write, here or in another process),
   * undefined when no cheap one exists (the keyring).
   */
  stamp(): string | undefined;
}

interface StoreFile {
  version: 1;
  credentials: Record<string, StoredCredential>;
}

const KEYRING_SERVICE = 'svc';
const KEYRING_INDEX = '__index__';

export function credentialFilePath(env: Readonly<Record<string, string | undefined>>): string {
  return join(globalConfigDir(env as Record<string, string | undefined>), 'credentials.json');
}

export function createCredentialStore(options: {
  env: Readonly<Record<string, string | undefined>>;
  backend: 'file' | 'keyring';
  onSecret?: (secret: string) => void;
}): CredentialStore {
  const path = credentialFilePath(options.env);
  const file = fileBackend(path);
  let keyring: Backend | undefined;
  let keyringError: string | undefined;
  if (options.backend === 'keyring') {
    try {
      keyring = keyringBackend();
    } catch (error) {
      keyringError = (error as Error).message;
    }
  }
  const active = (): Backend => keyring ?? file;
  const remember = (credential: StoredCredential | undefined) => {
    if (!credential) return credential;
    for (const secret of [credential.value, credential.access, credential.refresh])
      if (secret) options.onSecret?.(secret);
    return credential;
  };
  const guard = <T>(fn: (backend: Backend) => T): T => {
    try {
      return fn(active());
    } catch (error) {
      if (keyring) {
        // A keyring that fails at use (AccessDenied in a headless session) falls back cleanly.
        keyringError = (error as Error).message;
        keyring = undefined;
        return fn(file);
      }
      throw error;
    }
  };
  return {
    get: (provider) => remember(guard((b) => b.read()[provider])),
    set(provider, credential) {
      remember(credential);
      guard((b) => {
        const data = b.read();
        data[provider] = credential;
        b.write(data);
      });
    },
    delete(provider) {
      return guard((b) => {
        const data = b.read();
        if (!(provider in data)) return false;
        delete data[provider];
        b.write(data);
        return true;
      });
    },
    list: () => guard((b) => Object.keys(b.read()).sort()),
    status() {
      const status: StoreStatus = {
        backend: keyring ? 'keyring' : 'file',
        requested: options.backend,
        path: keyring ? `keyring service "${KEYRING_SERVICE}"` : path,
        exists: keyring ? true : existsSync(path),
      };
      if (keyringError) status.keyring_error = keyringError;
      if (!keyring && status.exists) status.mode = (statSync(path).mode & 0o777).toString(8).padStart(4, '0');
      return status;
    },
    durable: () => true,
    stamp: () => (keyring ? undefined : file.stamp?.()),
  };
}

interface Backend {
  read(): Record<string, StoredCredential>;
  write(data: Record<string, StoredCredential>): void;
  stamp?(): string;
}

function fileBackend(path: string): Backend {
  // The file as last parsed, by its identity (inode, size, times): every model resolution reads
  // the store (issue 17), and a file nobody changed is then one stat, not a read and a parse. An
  // edit (in place or by rename, here or in another process) changes the identity, so the next
  // read sees it.
  let memo: { identity: string; credentials: Record<string, StoredCredential> } | undefined;
  const identityNow = (): string | undefined => {
    let stat: ReturnType<typeof statSync>;
    try {
      stat = statSync(path, { throwIfNoEntry: false });
    } catch {
      stat = undefined; // as existsSync: a file that cannot be looked at is not there
    }
    return stat ? `${stat.ino} ${stat.size} ${stat.mtimeMs} ${stat.ctimeMs}` : undefined;
  };
  return {
    stamp: () => identityNow() ?? 'none',
    read() {
      const identity = identityNow();
      if (!identity) return {};
      // A copy: set and delete change what they read before they write it.
      if (memo?.identity === identity) return { ...memo.credentials };
      let parsed: StoreFile;
      try {
        parsed = JSON.parse(readFileSync(path, 'utf8')) as StoreFile;
      } catch (error) {
        throw new SvcError(
          'config_error',
          `credential store ${path}: unreadable (${(error as Error).message}); fix or remove the file, then run svc auth again`,
        );
      }
      const credentials =
        parsed && typeof parsed.credentials === 'object' && parsed.credentials ? parsed.credentials : {};
      memo = { identity, credentials };
      return { ...credentials };
    },
    write(data) {
      memo = undefined;
      makeDirs(dirname(path), 0o700);
      const tmp = `${path}.${process.pid}.tmp`;
      const body: StoreFile = { version: 1, credentials: data };
      writeFileSync(tmp, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
      chmodSync(tmp, 0o600);
      renameSync(tmp, path);
    },
  };
}

interface KeyringEntry {
  getPassword(): string | null | undefined;
  setPassword(password: string): void;
  deletePassword(): boolean;
}

/** Loaded on demand: the native module is optional and absent on some machines. */
function keyringBackend(): Backend {
  const requireHere = createRequire(import.meta.url);
  const { Entry } = requireHere('@napi-rs/keyring') as {
    Entry: new (service: string, account: string) => KeyringEntry;
  };
  const entry = (account: string) => new Entry(KEYRING_SERVICE, account);
  // Probe once so a keyring that cannot store (no session keyring) is detected up front.
  const probe = entry('__probe__');
  probe.setPassword('ok');
  probe.deletePassword();
  return {
    read() {
      const index = JSON.parse(entry(KEYRING_INDEX).getPassword() ?? '[]') as string[];
      const out: Record<string, StoredCredential> = {};
      for (const id of index) {
        const raw = entry(id).getPassword();
        if (raw) out[id] = JSON.parse(raw) as StoredCredential;
      }
      return out;
    },
    write(data) {
      const previous = JSON.parse(entry(KEYRING_INDEX).getPassword() ?? '[]') as string[];
      for (const id of previous) if (!(id in data)) entry(id).deletePassword();
      for (const [id, credential] of Object.entries(data)) entry(id).setPassword(JSON.stringify(credential));
      entry(KEYRING_INDEX).setPassword(JSON.stringify(Object.keys(data)));
    },
  };
}
