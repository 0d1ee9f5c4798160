/**
 * The permission dialog shows what is approved whole: a long command windowed from its first line
 * with the allow keys waiting for its last, its control characters shown (`^[`), an MCP call's
 * arguments as JSON.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import type { PermissionDecision } from '../../src/surfaces/tui/client';
import { PermissionDialog } from '../../src/surfaces/tui/ui/dialogs/permission-dialog';
import { tick } from './fake-client';

const ESC = '\x1b';
const CONCEAL = `${ESC}[8m`;
const PAGE_DOWN = `${ESC}[6~`;
const PAGE_UP = `${ESC}[5~`;

/** An escape sequence other than Ink's own colors (SGR 8 conceal, any OSC). */
const foreign = (frame: string) =>
  frame.includes(`${ESC}]`) || frame.includes(CONCEAL) || frame.includes('\x07');

describe('permission dialog: what is approved is shown whole', () => {
  const longCommand = `touch PWNED_TOP\n${'# just listing\n'.repeat(80)}ls -la`;
  const bash = (command: string) => ({
    session_id: 'ses_1',
    request_id: 'perm_long',
    tool: 'bash',
    title: `bash: ${command.split('\n')[0]}`,
    details: { command },
  });

  it('opens a long command on its first line and allows only once its last line was shown', async () => {
    const decisions: PermissionDecision[] = [];
    const view = render(
      <PermissionDialog
        request={bash(longCommand)}
        height={27}
        armDelayMs={0}
        onDecision={(d) => decisions.push(d)}
      />,
    );
    await tick();
    const first = view.lastFrame() ?? '';
    expect(first.split('\n').length).toBeLessThanOrEqual(27);
    expect(first).toContain('Permission: bash');
    expect(first).toContain('$ touch PWNED_TOP');
    expect(first).toMatch(/\+\d+ more lines · pgdn/);
    expect(first).not.toContain('ls -la');
    // Unread: y, s and enter do nothing.
    for (const key of ['y', 's', '\r']) view.stdin.write(key);
    await tick(60);
    expect(decisions).toEqual([]);
    // Page down to the end (bounded), then y allows.
    for (let i = 0; i < 20 && !(view.lastFrame() ?? '').includes('ls -la'); i++) {
      view.stdin.write(PAGE_DOWN);
      await tick(40);
    }
    const last = view.lastFrame() ?? '';
    expect(last).toContain('ls -la');
    expect(last).toContain('Permission: bash');
    expect(last.split('\n').length).toBeLessThanOrEqual(27);
    // Back at the top it stays read.
    for (let i = 0; i < 20 && !(view.lastFrame() ?? '').includes('$ touch PWNED_TOP'); i++) {
      view.stdin.write(PAGE_UP);
      await tick(40);
    }
    expect(view.lastFrame()).toContain('$ touch PWNED_TOP');
    view.stdin.write('y');
    await tick(60);
    expect(decisions).toEqual(['allow_once']);
    view.unmount();
  });

  it('denies an unread long command at once', async () => {
    const decisions: PermissionDecision[] = [];
    const view = render(
      <PermissionDialog
        request={bash(longCommand)}
        height={20}
        armDelayMs={0}
        onDecision={(d) => decisions.push(d)}
      />,
    );
    await tick();
    view.stdin.write('n');
    await tick(60);
    expect(decisions).toEqual(['deny']);
    view.unmount();
  });

  it('shows the control characters of a command instead of passing them to the terminal', async () => {
    const view = render(
      <PermissionDialog
        request={bash(`touch PWNED ${CONCEAL}# ls${ESC}]0;t\x07 \u202e;x`)}
        height={20}
        armDelayMs={0}
        onDecision={() => {}}
      />,
    );
    await tick();
    const frame = view.lastFrame() ?? '';
    expect(foreign(frame)).toBe(false);
    expect(frame).toContain('$ touch PWNED ^[[8m# ls^[]0;t^G <U+202E>;x');
    view.unmount();
  });

  it("shows an MCP call's arguments as JSON", async () => {
    const view = render(
      <PermissionDialog
        request={{
          session_id: 'ses_1',
          request_id: 'perm_mcp',
          tool: 'mcp__fs__write_file',
          title: 'write_file on MCP server fs',
          details: {
            mcp_server: 'fs',
            mcp_tool: 'write_file',
            arguments: { path: '/etc/passwd', content: `x${ESC}[8m` },
          },
        }}
        height={20}
        armDelayMs={0}
        onDecision={() => {}}
      />,
    );
    await tick();
    const frame = view.lastFrame() ?? '';
    expect(frame).toContain('mcp_server: fs');
    expect(frame).toContain('arguments: {"path":"/etc/passwd","content":"x\\u001b[8m"}');
    view.unmount();
  });
});
