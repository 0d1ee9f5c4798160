import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';

const call = (app: App, name: string, input: Record<string, unknown>, sessionId?: string) =>
  invokeTool(app, name, input, { surface: 'agent', sessionId }) as Promise<any>;

async function guard(app: App, sessionId: string, paths: string[]) {
  for (const g of app.mutationGuards) await g({ tool: 'edit', sessionId, paths });
}

describe('workspace claims', () => {
  it('TOOLS-34: supports acquire, renew, release, list and negotiate', async () => {
    const app = await makeTestApp();
    const a = (await app.sessions.create({ title: 'a' })).id;
    const b = (await app.sessions.create({ title: 'b' })).id;
    const acquired = await call(
      app,
      'workspace_claim',
      { action: 'acquire', paths: ['src/'], mode: 'hard', reason: 'refactor' },
      a,
    );
    expect(acquired.claim).toMatchObject({
      session_id: a,
      paths: ['src/'],
      mode: 'hard',
      active: true,
      reason: 'refactor',
    });
    const id = acquired.claim.id;

    (app.clock as unknown as { advance(ms: number): void }).advance(1000);
    const renewed = await call(app, 'workspace_claim', { action: 'renew', claim_id: id, ttl_seconds: 60 }, a);
    expect(renewed.claim.expires_at).toBe(app.clock.now() + 60_000);

    const listed = await call(app, 'workspace_claim', { action: 'list' });
    expect(listed.claims.map((c: { id: string }) => c.id)).toEqual([id]);

    const seen: string[] = [];
    app.bus.subscribe(a, (e) => seen.push(e.type));
    const negotiation = await call(
      app,
      'workspace_claim',
      { action: 'negotiate', claim_id: id, message: 'need src/x.ts' },
      b,
    );
    expect(negotiation).toMatchObject({ holder_session_id: a, outcome: 'pending' });
    expect(seen).toContain('claim.negotiation_requested');

    await expect(call(app, 'workspace_claim', { action: 'release', claim_id: id }, b)).rejects.toThrow(
      /held by session/,
    );
    const released = await call(app, 'workspace_claim', { action: 'release', claim_id: id }, a);
    expect(released.claim).toMatchObject({ active: false, release_reason: 'released' });
    expect((await call(app, 'workspace_claim', { action: 'list' })).count).toBe(0);
  });

  it('TOOLS-36: a hard claim blocks overlapping mutations of other sessions, naming the claim', async () => {
    const app = await makeTestApp();
    const a = (await app.sessions.create()).id;
    const b = (await app.sessions.create()).id;
    const { claim } = await call(
      app,
      'workspace_claim',
      { action: 'acquire', paths: ['src/billing/'], mode: 'hard' },
      a,
    );
    await expect(guard(app, b, ['src/billing/invoice.ts'])).rejects.toThrowError(
      new RegExp(`hard workspace claim ${claim.id} held by session ${a}`),
    );
    await expect(guard(app, b, ['src/other.ts'])).resolves.toBeUndefined();
    await expect(guard(app, a, ['src/billing/invoice.ts'])).resolves.toBeUndefined();
    await expect(
      call(app, 'workspace_claim', { action: 'acquire', paths: ['src/'], mode: 'hard' }, b),
    ).rejects.toThrow(/already covers/);
  });

  it('TOOLS-35: a soft claim is advisory: other sessions may still mutate, with a warning on overlap', async () => {
    const app = await makeTestApp();
    const a = (await app.sessions.create()).id;
    const b = (await app.sessions.create()).id;
    await call(app, 'workspace_claim', { action: 'acquire', paths: ['src/a.ts'], mode: 'soft' }, a);
    await expect(guard(app, b, ['src/a.ts'])).resolves.toBeUndefined();
    const second = await call(
      app,
      'workspace_claim',
      { action: 'acquire', paths: ['src/'], mode: 'hard' },
      b,
    );
    expect(second.warnings[0]).toMatch(/overlaps soft claim/);
  });

  it('claims expire', async () => {
    const app = await makeTestApp();
    const a = (await app.sessions.create()).id;
    const b = (await app.sessions.create()).id;
    await call(app, 'workspace_claim', { action: 'acquire', paths: ['.'], mode: 'hard', ttl_seconds: 10 }, a);
    await expect(guard(app, b, ['README.md'])).rejects.toThrow();
    (app.clock as unknown as { advance(ms: number): void }).advance(11_000);
    await expect(guard(app, b, ['README.md'])).resolves.toBeUndefined();
  });

  it('refuses bad input by name', async () => {
    const app = await makeTestApp();
    const a = (await app.sessions.create()).id;
    await expect(call(app, 'workspace_claim', { action: 'acquire', paths: ['x'] })).rejects.toThrow(
      /session_id: required/,
    );
    await expect(call(app, 'workspace_claim', { action: 'acquire' }, a)).rejects.toThrow(/paths: required/);
    await expect(
      call(app, 'workspace_claim', { action: 'acquire', paths: ['../etc/passwd'] }, a),
    ).rejects.toThrow(/outside the workspace/);
    await expect(call(app, 'workspace_claim', { action: 'renew', claim_id: 'clm_nope' }, a)).rejects.toThrow(
      /no claim "clm_nope"/,
    );
  });
});

describe('markers', () => {
  it('TOOLS-37: supports create, list and delete', async () => {
    const app = await makeTestApp();
    const a = (await app.sessions.create()).id;
    const created = await call(
      app,
      'leave_marker',
      { action: 'create', path: 'src/parser.ts', kind: 'handoff', message: 'tests next' },
      a,
    );
    expect(created.marker).toMatchObject({
      session_id: a,
      path: 'src/parser.ts',
      kind: 'handoff',
      message: 'tests next',
    });
    expect((await call(app, 'leave_marker', { action: 'list', path: 'src/' })).count).toBe(1);
    expect((await call(app, 'leave_marker', { action: 'list', path: 'docs/' })).count).toBe(0);
    await call(app, 'leave_marker', { action: 'delete', marker_id: created.marker.id });
    expect((await call(app, 'leave_marker', { action: 'list' })).count).toBe(0);
    await expect(call(app, 'leave_marker', { action: 'create', path: 'x' }, a)).rejects.toThrow(
      /message: required/,
    );
  });
});

describe('hard claims against the real coding tools', () => {
  it("TOOLS-36: another session's write and edit on a hard-claimed path fail, naming the claim; the owner's succeed", async () => {
    const app = await makeTestApp({
      files: { 'src/billing/invoice.ts': 'export const total = 1;\n', 'src/other.ts': 'x\n' },
    });
    const owner = (await app.sessions.create()).id;
    const other = (await app.sessions.create()).id;
    const { claim } = await call(
      app,
      'workspace_claim',
      { action: 'acquire', paths: ['src/billing/'], mode: 'hard', reason: 'billing refactor' },
      owner,
    );
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    await expect(call(app, 'write', { path: 'src/billing/new.ts', content: 'x' }, other)).rejects.toThrow(
      new RegExp(`hard workspace claim ${claim.id} held by session ${owner}.*billing refactor`),
    );
    await call(app, 'view', { path: 'src/billing/invoice.ts' }, other);
    await expect(
      call(
        app,
        'edit',
        { path: 'src/billing/invoice.ts', old_string: 'total = 1', new_string: 'total = 2' },
        other,
      ),
    ).rejects.toThrow(/hard workspace claim/);
    expect(readFileSync(join(app.workspace, 'src/billing/invoice.ts'), 'utf8')).toBe(
      'export const total = 1;\n',
    );
    await call(app, 'view', { path: 'src/other.ts' }, other);
    await call(app, 'write', { path: 'src/other.ts', content: 'y\n' }, other);
    await call(app, 'view', { path: 'src/billing/invoice.ts' }, owner);
    await call(
      app,
      'edit',
      { path: 'src/billing/invoice.ts', old_string: 'total = 1', new_string: 'total = 2' },
      owner,
    );
    expect(readFileSync(join(app.workspace, 'src/billing/invoice.ts'), 'utf8')).toBe(
      'export const total = 2;\n',
    );
  });
});
