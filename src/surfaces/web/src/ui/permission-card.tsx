/**
 * A pending permission request: what the tool wants to do (the diff of a write, the command of a
 * shell call, or its details) and the TUI's three answers. The run resumes on an answer; every
 * browser on the session sees the request go when anyone answers it.
 *
 * What is approved is shown as it runs: in the title, the command and the details every control
 * character and bidi override is shown as a marker (`<U+202E>`, `^[`; a bidi override would show
 * `ls ;touch X #` as `ls # X hcuot;`), with a warning line when the request had one, and the
 * command wraps instead of running off to the right.
 * @module
 */
import { useState } from 'preact/hooks';
import type { PermissionPrompt } from '../../../tui/client';
import { parseDiff } from '../diff';
import { CodeBlock } from '../markdown';
import type { Decision } from '../session-controller';
import { KeyValues, outsideText, str } from './common';
import { DiffView } from './diff-view';

/** Bidi embeddings, overrides, isolates and marks: they change the order characters are shown in. */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const CHOICES: { decision: Decision; label: string; tone: string }[] = [
  { decision: 'allow_once', label: 'Allow once', tone: 'primary' },
  { decision: 'allow_session', label: 'Allow for this session', tone: '' },
  { decision: 'deny', label: 'Deny', tone: 'danger' },
];

export function PermissionCard({
  request,
  onAnswer,
}: {
  request: PermissionPrompt;
  onAnswer(decision: Decision): Promise<void>;
}) {
  const [busy, setBusy] = useState(false);
  const details = (request.details ?? {}) as Record<string, unknown>;
  const diff = typeof details.diff === 'string' && details.diff.trim() ? parseDiff(details.diff) : [];
  const command = typeof details.command === 'string' ? details.command : undefined;
  const rest = Object.entries(details).filter(
    ([key, value]) =>
      !['diff', 'command'].includes(key) && value !== undefined && value !== null && value !== '',
  );
  const reordered = [request.title, command ?? '', ...rest.map(([, value]) => str(value))].some((text) =>
    BIDI.test(text),
  );
  const headingId = `perm-${request.request_id}`;
  return (
    <section class="permission" aria-labelledby={headingId}>
      <h2 id={headingId}>
        Permission needed: <code>{outsideText(request.tool)}</code>
      </h2>
      <p class="perm-title">{outsideText(request.title)}</p>
      {reordered ? (
        <p class="perm-warning" role="alert">
          This command contains characters that change its displayed order (shown as &lt;U+202E&gt; and the
          like): read it as shown here.
        </p>
      ) : null}
      {command ? <CodeBlock code={outsideText(command)} lang="bash" /> : null}
      {diff.length ? <DiffView files={diff} /> : null}
      {rest.length ? (
        <details>
          <summary>Details</summary>
          <KeyValues
            rows={rest.map(([key, value]) => [key, <code key={key}>{outsideText(str(value))}</code>])}
          />
        </details>
      ) : null}
      <div class="perm-actions">
        {CHOICES.map((choice) => (
          <button
            key={choice.decision}
            type="button"
            class={choice.tone}
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await onAnswer(choice.decision);
              } finally {
                setBusy(false);
              }
            }}
          >
            {choice.label}
          </button>
        ))}
      </div>
    </section>
  );
}
