/**
 * The workspace trust question, asked on the terminal before the TUI's app exists (so nothing the
 * workspace's config names has started): the dialog alone, rendered with Ink, cleared once
 * answered. Loaded with the rest of the TUI, through `await import()`.
 * @module
 */
import { render } from 'ink';
import type { WorkspaceTrustReport } from '../../config/trust';
import { type TrustAnswer, TrustDialog } from './ui/dialogs/trust-dialog';
import { KeyInputRoot } from './ui/key-input';
import { guardStdin } from './ui/stdin-guard';

/**
 * The dialog as the prompt renders it: under the TUI's key root, so its keys pass the same input
 * filter as the app's (an escape sequence that names no key, such as `ESC [1;5m`, made Ink's
 * useInput throw when the dialog read keys itself).
 */
export function TrustQuestion(props: Parameters<typeof TrustDialog>[0]) {
  return (
    <KeyInputRoot>
      <TrustDialog {...props} />
    </KeyInputRoot>
  );
}

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
      <TrustQuestion
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
