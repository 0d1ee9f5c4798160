/**
 * The workspace trust question, asked on the terminal before the TUI's app exists (so nothing the
 * workspace's config names has started): the dialog alone, rendered with Ink, cleared once
 * answered. Loaded with the rest of the TUI, through `await import()`.
 * @module
 */
import { render } from 'ink';
import type { WorkspaceTrustReport } from '../../config/trust';
import { type TrustAnswer, TrustDialog } from './ui/dialogs/trust-dialog';
import { guardStdin } from './ui/stdin-guard';

export async function askWorkspaceTrust(options: {
  report: WorkspaceTrustReport;
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}): Promise<TrustAnswer> {
  let answer: TrustAnswer = 'quit';
  const unguard = guardStdin(options.stdin);
  try {
    const instance = render(
      <TrustDialog
        workspace={options.report.workspace}
        keys={options.report.risky}
        onAnswer={(a) => {
          answer = a;
          instance.clear();
          instance.unmount();
        }}
      />,
      {
        stdin: options.stdin,
        stdout: options.stdout,
        stderr: options.stderr,
        exitOnCtrlC: false,
        patchConsole: false,
      },
    );
    await instance.waitUntilExit();
  } finally {
    unguard();
  }
  return answer;
}
