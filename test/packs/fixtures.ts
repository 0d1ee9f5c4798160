/**
 * Packs for the operating-pack tests, with marker strings planted where bodies live (preamble,
 * hook commands, policy reasons) and a secret, so any output can be checked for leaks.
 * @module
 */
import { stringify } from 'smol-toml';
import type { App } from '../../src/app';
import { createHttpApp } from '../../src/surfaces/http/index';
import { makeTestApp, type TestAppOptions } from '../helpers/make-test-app';

export const PREAMBLE_MARKER = 'PREAMBLE-MARKER-7f3a';
export const HOOK_MARKER = 'HOOK-MARKER-91c2';
export const POLICY_MARKER = 'POLICY-MARKER-55e0';
export const TASK_MARKER = 'TASK-RULE-MARKER-c0de';
/** Shaped like a provider key: the redactor's patterns must scrub it wherever it lands. */
export const PACK_SECRET = 'sk-packsecret-0123456789abcdefXYZ';
/** A secret the process environment holds: hooks must never inherit it. */
export const ENV_SECRET = 'env-secret-value-4242-abcdef';

export const REVIEW_PACK = `
name = "review"
description = "Careful reviewer (${PACK_SECRET})"
skills = ["code-review", "testing"]

[prompt]
preamble = "${PREAMBLE_MARKER}: review every diff before writing. token ${PACK_SECRET}"

[[hooks]]
event = "tool.finished"
command = "echo ${HOOK_MARKER} $SVC_HOOK_EVENT $SVC_TOOL $SVC_SESSION_ID >> hook.log"

[[hooks]]
event = "run.finished"
command = "env > hook-env.txt; cat > hook-stdin.json"

[[policy]]
tool = "config"
effect = "deny"
reason = "${POLICY_MARKER}"

[[task_rules]]
name = "tests-first"
instruction = "${TASK_MARKER}: write the failing test first."
when = "fixing a bug"

[[skill_rules]]
skill = "testing"
when = "a change touches src/"

[choreography]
preset = "executor_reviewer"
`;

/** An allowlist pack: only get_* tools stay. */
export const STRICT_PACK = `
name = "strict"
description = "read-only status"

[[policy]]
tool = "get_*"
effect = "allow"

[[policy]]
tool = "get_config"
effect = "deny"
`;

/** Three errors and a planted marker in the bad values. */
export const BROKEN_PACK = `
name = "broken"
skills = "not-a-list"

[[hooks]]
event = "never.happens"
command = "echo ${HOOK_MARKER}"

[[policy]]
tool = "view"
effect = "${POLICY_MARKER}"
`;

export const MARKERS = [PREAMBLE_MARKER, HOOK_MARKER, POLICY_MARKER, TASK_MARKER, PACK_SECRET, ENV_SECRET];

export const ON = { options: { operating_packs: true } };

export const PRESETS = {
  options: {
    operating_packs: true,
    operating_mode_presets: {
      careful: {
        pack: 'review',
        description: 'review with plan-first choreography',
        overrides: { choreography: { preset: 'plan_then_execute' }, skills: ['code-review'] },
      },
      badpreset: { pack: 'review', overrides: { polcy: [] } },
      missing: { pack: 'no-such-pack' },
    },
  },
};

export function packFiles(extra: Record<string, string> = {}): Record<string, string> {
  return {
    '.svc/packs/review/pack.toml': REVIEW_PACK,
    '.svc/packs/strict/pack.toml': STRICT_PACK,
    'elsewhere/broken/pack.toml': BROKEN_PACK,
    ...extra,
  };
}

export async function packsApp(options: TestAppOptions = {}) {
  return makeTestApp({ files: packFiles(), config: ON, ...options });
}

export function toml(value: Record<string, unknown>): string {
  return stringify(value);
}

export function http(app: App) {
  const hono = createHttpApp(app, { allowNoAuth: true });
  return {
    get: (query: string) => hono.request(`/v1/session-operating-mode${query}`),
    post: (body: unknown, raw?: string) =>
      hono.request('/v1/session-operating-mode', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: raw ?? JSON.stringify(body),
      }),
    delete: (query: string) => hono.request(`/v1/session-operating-mode${query}`, { method: 'DELETE' }),
  };
}

export function expectNoMarkers(text: string) {
  for (const marker of MARKERS) {
    if (text.includes(marker)) throw new Error(`output leaks ${marker}: ${text.slice(0, 400)}`);
  }
}
