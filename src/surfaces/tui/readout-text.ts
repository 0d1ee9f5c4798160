/**
 * How a readout is printed in the TUI: the tool's own CLI text renderer when it has one (so
 * `/config-status` reads like `svc config show-config-status`), else the CLI's default rendering.
 * @module
 */
import type { AnyTool } from '../../tools/core/define-tool';
import { renderText } from '../../util/render-text';

export function readoutText(tool: AnyTool | undefined, value: unknown, input: unknown = {}): string {
  const bindings = [tool?.surfaces?.cli ?? []].flat();
  const withText = bindings.find((b) => typeof b.text === 'function');
  if (withText?.text) {
    try {
      return withText.text(value, input);
    } catch {
      // A renderer written for the CLI's input shape may not fit; the default always does.
    }
  }
  return renderText(value);
}
