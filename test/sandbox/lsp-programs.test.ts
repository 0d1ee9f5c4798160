/**
 * The programs a language server runs, and what of /tmp its sandbox shows (found by probing):
 * - a workspace's own typescript-language-server (node_modules/.bin) and typescript
 *   (node_modules/typescript/lib/tsserver.js) ran on a read-only `diagnostics` call of an untrusted
 *   workspace, unsandboxed when bubblewrap was in fallback. Pins: untrusted, svc's own server and
 *   TypeScript run (the workspace's are not run, and lsp_status says so and why); trusted, the
 *   workspace's run (as before); other built-ins (pyright…) found only in the workspace are missing
 *   until it is trusted;
 * - the sandbox showed the whole top directory of /tmp a server's program sat in, so a server read
 *   a sibling project's `.env`. Pins: only the program's package is shown, and the server still runs.
 */
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { isolatedEnv } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { toolHarness } from '../tools/harness';

const FAKE = resolve(import.meta.dirname, '../fixtures/coding-tools/fake-lsp.mjs');
const svcRequire = createRequire(import.meta.url);
const SVC_SERVER = svcRequire.resolve('typescript-language-server/lib/cli.mjs');
const SVC_TSSERVER = svcRequire.resolve('typescript/lib/tsserver.js');

/** A TypeScript workspace with a type error and its own server and tsserver, each leaving a mark. */
function plantedWorkspace(): string {
  const root = tmpWorkspace({
    files: {
      'package.json': '{ "name": "demo", "private": true }\n',
      'tsconfig.json': '{ "compilerOptions": { "strict": true, "noEmit": true }, "include": ["src"] }\n',
      'src/a.ts': 'export const count: number = 1;\n',
      'src/b.ts': "import { count } from './a';\nexport const label: string = count;\n",
      'node_modules/.bin/typescript-language-server': `#!/bin/sh\necho ran > "$(dirname "$0")/../../server-ran"\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(SVC_SERVER)} "$@"\n`,
      'node_modules/typescript/package.json': '{ "name": "typescript", "version": "5.9.3" }\n',
      'node_modules/typescript/lib/tsserver.js': `require('fs').writeFileSync(require('path').join(__dirname, '../../../tsserver-ran'), 'ran');\nrequire(${JSON.stringify(SVC_TSSERVER)});\n`,
    },
  });
  chmodSync(join(root, 'node_modules/.bin/typescript-language-server'), 0o755);
  return root;
}

const typescript = (status: { servers: { id: string }[] }) =>
  status.servers.find((s) => s.id === 'typescript') as Record<string, any>;

describe("a workspace's own language-server programs", { timeout: 120_000 }, () => {
  it('untrusted (require, sandbox in fallback): svc runs its own server and TypeScript, and says why', async () => {
    const workspace = plantedWorkspace();
    const h = await toolHarness({
      workspace,
      globalConfig: {
        security: { workspace_trust: 'require' },
        options: { sandbox: { bwrap_path: '/nonexistent/bwrap' }, lsp: { diagnostics_wait_seconds: 60 } },
      },
    });
    const result = await h.call('diagnostics', { path: 'src/b.ts', wait_seconds: 60 });
    expect(result.counts.error).toBe(1);
    expect(existsSync(join(workspace, 'server-ran'))).toBe(false);
    expect(existsSync(join(workspace, 'tsserver-ran'))).toBe(false);
    const status = typescript(await h.call('lsp_status', {}));
    expect(status).toMatchObject({
      state: 'found',
      origin: 'svc',
      tsserver: { origin: 'svc', path: SVC_TSSERVER },
    });
    expect(status.args).toEqual([SVC_SERVER, '--stdio']);
    expect(status.note).toContain(
      "not the workspace's own node_modules/typescript, node_modules/.bin/typescript-language-server: workspace not trusted; `svc trust",
    );
  });

  it('trusted (SVC_TRUST_WORKSPACE=1): the workspace’s own server and TypeScript run', async () => {
    const workspace = plantedWorkspace();
    const h = await toolHarness({
      workspace,
      env: isolatedEnv(workspace, { SVC_TRUST_WORKSPACE: '1' }),
      // Unsandboxed: the planted programs hand over to svc's own, named by path in their text, which
      // the sandbox does not show when svc's checkout is under /tmp (a CI clone); a real
      // workspace's programs live in its own node_modules.
      globalConfig: {
        options: { sandbox: { bwrap_path: '/nonexistent/bwrap' }, lsp: { diagnostics_wait_seconds: 60 } },
      },
    });
    const status = typescript(await h.call('lsp_status', {}));
    expect(status).toMatchObject({
      origin: 'workspace',
      command: join(workspace, 'node_modules/.bin/typescript-language-server'),
      tsserver: { origin: 'workspace' },
    });
    expect(status.note).toContain('SVC_TRUST_WORKSPACE=1');
    const result = await h.call('diagnostics', { path: 'src/b.ts', wait_seconds: 60 });
    expect(result.counts.error).toBe(1);
    expect(readFileSync(join(workspace, 'server-ran'), 'utf8')).toContain('ran');
    expect(readFileSync(join(workspace, 'tsserver-ran'), 'utf8')).toContain('ran');
  });

  it('svc ships the TypeScript it runs instead: typescript is a dependency, not a devDependency', () => {
    const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8'));
    expect(pkg.dependencies).toHaveProperty('typescript');
    expect(pkg.dependencies).toHaveProperty('typescript-language-server');
    expect(pkg.devDependencies ?? {}).not.toHaveProperty('typescript');
  });

  it('another built-in found only in the workspace (pyright) is missing until the workspace is trusted', async () => {
    const files = {
      'pyproject.toml': '[project]\nname = "demo"\n',
      'node_modules/.bin/pyright-langserver': '#!/bin/sh\necho ran > pyright-ran\n',
    };
    const untrusted = tmpWorkspace({ files });
    chmodSync(join(untrusted, 'node_modules/.bin/pyright-langserver'), 0o755);
    const h = await toolHarness({
      workspace: untrusted,
      env: isolatedEnv(untrusted, { PATH: '/nonexistent' }),
    });
    const python = (await h.call('lsp_status', {})).servers.find((s: { id: string }) => s.id === 'python');
    expect(python).toMatchObject({ state: 'missing' });
    expect(python.note).toContain(
      "not the workspace's own node_modules/.bin/pyright-langserver: workspace not trusted",
    );

    const trusted = tmpWorkspace({ files });
    chmodSync(join(trusted, 'node_modules/.bin/pyright-langserver'), 0o755);
    const t = await toolHarness({
      workspace: trusted,
      env: isolatedEnv(trusted, { PATH: '/nonexistent' }),
      globalConfig: { security: { workspace_trust: 'off' } },
    });
    const found = (await t.call('lsp_status', {})).servers.find((s: { id: string }) => s.id === 'python');
    expect(found).toMatchObject({ state: 'found', origin: 'workspace' });
    expect(found.note).toContain('security.workspace_trust = "off"');
  });
});

/** A directory of /tmp with a secret next to where the test puts a server's programs. */
function tmpTop(): string {
  const top = mkdtempSync(join(tmpdir(), 'svc-lsp-programs-'));
  onTestFinished(() => rmSync(top, { recursive: true, force: true }));
  mkdirSync(join(top, 'sibling-project'));
  writeFileSync(join(top, 'sibling-project', '.env'), 'SIBLING_SECRET=1\n');
  return top;
}

describe('what of /tmp a sandboxed language server sees', { timeout: 120_000 }, () => {
  it("only its program's package: not the projects next to it, and it still answers", async () => {
    const top = tmpTop();
    mkdirSync(join(top, 'pkg', 'lib'), { recursive: true });
    writeFileSync(join(top, 'pkg', 'package.json'), '{ "name": "fake-lsp", "type": "module" }\n');
    copyFileSync(FAKE, join(top, 'pkg', 'lib', 'server.mjs'));
    const script = `cat ${join(top, 'sibling-project', '.env')} > seen 2>&1; exec "$0" "$1"`;
    const h = await toolHarness({
      files: { 'a.ts': 'an ERROR here\n' },
      config: {
        lsp: {
          fake: {
            command: 'sh',
            args: ['-c', script, process.execPath, join(top, 'pkg', 'lib', 'server.mjs')],
            extensions: ['ts'],
          },
        },
        options: { sandbox: { mode: 'bwrap' } },
      },
    });
    const result = await h.call('diagnostics', { path: 'a.ts' });
    expect(JSON.stringify(result)).toContain('found ERROR');
    expect(h.read('seen')).not.toContain('SIBLING_SECRET');
    expect(h.read('seen')).toMatch(/No such file or directory/);
  });

  it('the real TypeScript server installed under /tmp (its typescript a symlink) answers, and sees no sibling', async () => {
    const top = tmpTop();
    const modules = join(top, 'install', 'node_modules');
    cpSync(dirname(dirname(SVC_SERVER)), join(modules, 'typescript-language-server'), { recursive: true });
    symlinkSync(dirname(dirname(SVC_TSSERVER)), join(modules, 'typescript'));
    const server = join(modules, 'typescript-language-server', 'lib', 'cli.mjs');
    const script = `cat ${join(top, 'sibling-project', '.env')} > seen 2>&1; exec "$0" "$@"`;
    const h = await toolHarness({
      files: {
        'tsconfig.json': '{ "compilerOptions": { "strict": true, "noEmit": true } }\n',
        'b.ts': 'export const label: string = 1;\n',
      },
      config: {
        lsp: {
          typescript: {
            command: 'sh',
            args: ['-c', script, process.execPath, server, '--stdio'],
            extensions: ['ts'],
            initialization_options: { tsserver: { path: join(modules, 'typescript', 'lib', 'tsserver.js') } },
          },
        },
        options: { sandbox: { mode: 'bwrap' }, lsp: { diagnostics_wait_seconds: 60 } },
      },
    });
    const result = await h.call('diagnostics', { path: 'b.ts', wait_seconds: 60 });
    expect(result.counts.error).toBe(1);
    expect(h.read('seen')).not.toContain('SIBLING_SECRET');
  });
});
