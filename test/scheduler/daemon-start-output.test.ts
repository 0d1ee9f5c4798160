/**
 * A daemon that exits before listening (src/scheduler/lifecycle.ts `spawnDaemon`): the error ends
 * with its stderr's last 500 characters, redacted before they are cut, so a secret the cut falls
 * inside is not shown in part.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const SECRET = 'sk-daemon-0123456789abcdefghijklmnopqrstuvwxyz';

describe.skipIf(process.platform !== 'linux')('a daemon that exits before listening', () => {
  it('DAEMON-OUT-1: its stderr in the error is redacted whole, then cut to its last 500 characters: no tail of a secret', async () => {
    const workspace = tmpWorkspace();
    const bin = join(workspace, 'main.js');
    // 1,000 characters, the secret, then 480: the last 500 begin 20 characters into the secret.
    writeFileSync(
      bin,
      `process.stderr.write('a'.repeat(1000) + ${JSON.stringify(SECRET)} + 'b'.repeat(480)); process.exit(3);`,
    );
    const app = await makeTestApp({
      workspace,
      env: isolatedEnv(workspace, { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1', SVC_BIN: bin }),
    });
    app.redactor.add(SECRET);
    const error = await invokeTool(app, 'autopilot_up', { port: 0 }, { surface: 'agent' }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/the daemon exited \(3\) before listening: /);
    expect(error?.message).toContain('b'.repeat(480));
    expect(error?.message).not.toContain(SECRET.slice(20));
    expect(error?.message).not.toContain(SECRET.slice(-10));
    await app.close();
  });
});
