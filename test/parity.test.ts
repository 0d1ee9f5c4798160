/**
 * The parity walker (ARCHITECTURE.md): every read tool with surface bindings returns the same
 * JSON through each of them, on the same state. Pins:
 * - every http binding answers 200 with the tool's payload;
 * - every cli binding prints the same payload with --json;
 * - every mcp binding answers the same payload as JSON text content (SDK client, in memory);
 * - both TUI clients answer the same payload: the local one (in process) for every tool, the
 *   attached one (over HTTP) for every tool with an http binding;
 * - the walk is not vacuous: the parity config opens every gate (operating packs, adaptive
 *   orchestration, the lifecycle tools, a language server, stigmergy read tools over MCP), a tool
 *   gated off there fails instead of being skipped, and at least as many tools are compared as
 *   there are read tools with two or more surfaces;
 * - mutating tools, and tools marked parity: false, are skipped (they change the state they would
 *   be compared on, or read process-local state).
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../src/app';
import { createHttpApp } from '../src/surfaces/http/index';
import { bindingsOf } from '../src/surfaces/http/mount-tools';
import { createHttpClient } from '../src/surfaces/tui/http-client';
import { createLocalClient } from '../src/surfaces/tui/local-client';
import type { AnyTool } from '../src/tools/core/types';
import { allTools } from '../src/tools/index';
import { isolatedEnv, makeTestApp } from './helpers/make-test-app';
import { maskVolatile, viaCli, viaHttp, viaMcp, viaTool } from './helpers/surfaces';
import { tmpWorkspace } from './helpers/tmp-workspace';

const readTools = allTools.filter(
  (t) => !t.mutates && t.parity !== false && (t.surfaces?.http || t.surfaces?.cli || t.surfaces?.mcp),
);

/** How many surfaces a tool declares (http, mcp and cli bindings; each binding counts). */
const surfaceCount = (tool: AnyTool) =>
  bindingsOf(tool).length + (tool.surfaces?.mcp ? 1 : 0) + [tool.surfaces?.cli ?? []].flat().length;

/** Read tools the walk must compare on at least two of their surfaces. */
const MULTI_SURFACE = readTools.filter((t) => surfaceCount(t) >= 2).map((t) => t.name);

/** Tools compared on two or more of their bindings' surfaces, filled in by the walk below. */
const compared = new Set<string>();

/**
 * Every walk starts from the same state: a git workspace with one file and one session (ses_0001),
 * with every gate open, so no read tool is skipped for being gated off.
 */
async function parityApp() {
  const workspace = tmpWorkspace({ git: true, files: { 'README.md': '# parity\n\nhello parity walker\n' } });
  const app = await makeTestApp({
    workspace,
    env: isolatedEnv(workspace, { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1' }),
    config: {
      options: {
        operating_packs: true,
        adaptive_orchestration: { enabled: true },
        stigmergy: { read_tools: true },
      },
      lsp: { typescript: { command: 'typescript-language-server', args: ['--stdio'], extensions: ['ts'] } },
    },
  });
  const session = await app.sessions.create({ title: 'parity' });
  // One finished run (run_0001), so the run read tools have one to read.
  const run = await app.runs.create({
    session_id: session.id,
    family_session_id: session.id,
    agent: 'build',
    origin: 'test',
    prompt: 'walk the parity',
    status: 'running',
  });
  await app.runs.update(run.id, {
    status: 'completed',
    started_at: app.clock.now(),
    finished_at: app.clock.now(),
  });
  return app;
}

function attachedClient(app: App) {
  const hono = createHttpApp(app, { allowNoAuth: true });
  const fetch = ((url: string, init?: RequestInit) =>
    hono.request(String(url), init)) as typeof globalThis.fetch;
  return createHttpClient({ url: 'http://parity.test', fetch });
}

describe('GEN-09: parity across surfaces', () => {
  it('has read tools to walk', () => {
    expect(readTools.length).toBeGreaterThan(3);
    expect(MULTI_SURFACE.length).toBeGreaterThan(20);
  });

  for (const tool of readTools) {
    const examples = (tool.examples as Record<string, unknown>[] | undefined) ?? [{}];
    for (const [index, example] of examples.entries()) {
      it(`GEN-09, HTTP-06: ${tool.name} #${index} returns the same JSON on every surface`, async () => {
        const app = await parityApp();
        const gate = app.tools.gates().find((g) => g.tool.name === tool.name);
        expect(gate?.registered, `${tool.name} is gated off in the parity config: ${gate?.reason}`).toBe(
          true,
        );
        const direct = maskVolatile(await viaTool(app, tool, example));
        let bindings = 0;
        for (const binding of bindingsOf(tool)) {
          const http = await viaHttp(app, binding, example);
          expect(http.status, `${binding.method} ${binding.path}: ${http.text}`).toBe(binding.status ?? 200);
          expect(maskVolatile(http.body)).toEqual(direct);
          bindings++;
        }
        if (tool.surfaces?.mcp) {
          expect(tool.surfaces.mcpGate?.(app) ?? true, `${tool.surfaces.mcp} is not offered over MCP`).toBe(
            true,
          );
          const mcp = await viaMcp(app, tool, example);
          expect(mcp.isError, `${tool.surfaces.mcp}: ${mcp.text}`).toBe(false);
          expect(maskVolatile(mcp.json)).toEqual(direct);
          bindings++;
        }
        const cli = tool.surfaces?.cli;
        for (const binding of [cli ?? []].flat()) {
          if (
            binding.fixed &&
            Object.entries(binding.fixed).some(([k, v]) => example[k] !== undefined && example[k] !== v)
          )
            continue;
          if (
            binding.fixed &&
            !Object.entries(binding.fixed).every(
              ([k, v]) =>
                (example[k] ?? (tool.input.parse({ ...example }) as Record<string, unknown>)[k]) === v,
            )
          )
            continue;
          const out = await viaCli(app, binding, example);
          expect(out.code, out.stderr).toBe(0);
          // A command-local envelope wraps the same payload (e.g. `{ posture, …discovery }`).
          const expected = binding.envelope
            ? maskVolatile(
                app.redactor.value(
                  await binding.envelope(direct, { app, input: tool.input.parse({ ...example }) }),
                ),
              )
            : direct;
          expect(maskVolatile(out.json)).toEqual(expected);
          bindings++;
        }
        // The TUI: in process for every tool, and attached over HTTP where the tool has a route.
        const local = await createLocalClient(app).callTool(tool.name, example);
        expect(maskVolatile(local.value), 'local TUI client').toEqual(direct);
        if (bindingsOf(tool).length) {
          const attached = await attachedClient(app).callTool(tool.name, example);
          expect(maskVolatile(attached.value), 'attached TUI client').toEqual(direct);
        }
        if (bindings >= 2) compared.add(tool.name);
      });
    }
  }

  it('compared every read tool that has two or more surfaces (the walk is not vacuous)', () => {
    expect(MULTI_SURFACE.filter((name) => !compared.has(name))).toEqual([]);
    expect(compared.size).toBeGreaterThanOrEqual(MULTI_SURFACE.length);
  });
});
