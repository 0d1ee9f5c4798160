/**
 * Which shell commands are checks (test, lint and typecheck runs) and what identifies the same
 * check later. Works on the parsed words bash analysis gives for each simple command
 * (shell/bash-analysis): wrappers (`env`, `timeout`, `nice`…) and package-runner prefixes
 * (`npx`, `pnpm exec`, `yarn`, `bunx`, `uv run`, `poetry run`, `python -m`…) are peeled off, then
 * the tool is recognised: npm/pnpm/yarn/bun scripts named test, lint, typecheck, check…, vitest,
 * jest, mocha, playwright test, tsc, eslint, biome, prettier --check, pytest, mypy, ruff, flake8,
 * pylint, go test/vet, golangci-lint, cargo test/clippy/check, rspec, phpunit, dotnet test,
 * mvn/gradle test, make test/check/lint, tox, nox, deno test/lint/check, node --test.
 * @module
 */
import { unwrap } from '../shell/bash-rules';

export type CheckKind = 'test' | 'lint' | 'typecheck';

export interface CheckCommand {
  kind: CheckKind;
  /** The recognised tool (`vitest`, `npm test`, `cargo clippy`). */
  tool: string;
  /** Normalized words identifying the check (runner prefixes and noise flags removed). */
  signature: string[];
}

export interface ShellCheck {
  checks: CheckCommand[];
  /**
   * The exit code is the checks' own: the last simple command of the line is a check (not
   * `npm test | tail`, `npm test || true`, `npm test; echo done`).
   */
  conclusive: boolean;
  /** Identity of this check run: the starting directory and every check's signature. */
  key: string;
  /** Human form: `npm test`, `npm run lint && npx tsc --noEmit`. */
  label: string;
}

const SCRIPT_KINDS: [RegExp, CheckKind][] = [
  [/^(test|tests|t|e2e|spec|unit|integration)(:.*)?$/, 'test'],
  [/^(lint|eslint|biome|format:check|fmt:check|check:lint)(:.*)?$/, 'lint'],
  [/^(typecheck|type-check|types|tsc|check:types|check)(:.*)?$/, 'typecheck'],
];

const DIRECT: Record<string, CheckKind> = {
  vitest: 'test',
  jest: 'test',
  mocha: 'test',
  ava: 'test',
  tap: 'test',
  pytest: 'test',
  'py.test': 'test',
  unittest: 'test',
  rspec: 'test',
  phpunit: 'test',
  tox: 'test',
  nox: 'test',
  tsc: 'typecheck',
  'vue-tsc': 'typecheck',
  mypy: 'typecheck',
  pyright: 'typecheck',
  eslint: 'lint',
  flake8: 'lint',
  pylint: 'lint',
  'golangci-lint': 'lint',
  rubocop: 'lint',
  stylelint: 'lint',
  shellcheck: 'lint',
};

const SUBCOMMAND: Record<string, Record<string, CheckKind>> = {
  go: { test: 'test', vet: 'lint' },
  cargo: { test: 'test', nextest: 'test', clippy: 'lint', check: 'typecheck' },
  biome: { check: 'lint', lint: 'lint', ci: 'lint' },
  ruff: { check: 'lint' },
  deno: { test: 'test', lint: 'lint', check: 'typecheck' },
  bun: { test: 'test' },
  dotnet: { test: 'test' },
  mvn: { test: 'test', verify: 'test' },
  gradle: { test: 'test', check: 'test' },
  './gradlew': { test: 'test', check: 'test' },
  make: { test: 'test', check: 'test', lint: 'lint', typecheck: 'typecheck' },
  playwright: { test: 'test' },
};

const NOISE =
  /^(--(no-)?colou?r(=.*)?|--reporter=.*|--silent|--quiet|-q|-v|--verbose|--watch=false|--run|--ci|--passWithNoTests|--pretty(=.*)?)$/;

/** Classify one shell line from its parsed commands; undefined when it runs no check. */
export function classifyShell(
  commands: readonly (readonly (string | null)[])[],
  cwd: string,
): ShellCheck | undefined {
  const checks: CheckCommand[] = [];
  let lastIsCheck = false;
  for (const argv of commands) {
    const check = classifyCommand(argv);
    lastIsCheck = check !== undefined;
    if (check) checks.push(check);
  }
  if (checks.length === 0) return undefined;
  const label = checks.map((c) => c.signature.join(' ')).join(' && ');
  return { checks, conclusive: lastIsCheck, key: `${cwd}::${label}`, label };
}

export function classifyCommand(raw: readonly (string | null)[]): CheckCommand | undefined {
  let argv = unwrap([...raw]).argv;
  // Package runners and interpreters in front of the tool.
  for (let guard = 0; guard < 4; guard++) {
    const [head, second] = argv;
    if (head === 'npx' || head === 'bunx' || head === 'pnpx') argv = dropOptions(argv.slice(1));
    else if ((head === 'pnpm' || head === 'yarn') && (second === 'exec' || second === 'dlx'))
      argv = argv.slice(2);
    else if (
      (head === 'uv' || head === 'poetry' || head === 'pipenv' || head === 'hatch') &&
      second === 'run'
    )
      argv = argv.slice(2);
    else if (head === 'bundle' && second === 'exec') argv = argv.slice(2);
    else if ((head === 'python' || head === 'python3') && second === '-m') argv = argv.slice(2);
    else break;
  }
  const [head, ...rest] = argv;
  if (!head) return undefined;
  const words = argv.filter((w): w is string => w !== null && !NOISE.test(w));
  const positional = rest.filter((w): w is string => w !== null && !w.startsWith('-'));

  if (head === 'npm' || head === 'pnpm' || head === 'yarn' || head === 'bun') {
    const [verb, script] = positional;
    const name = verb === 'run' || verb === 'run-script' ? script : verb;
    if (head === 'bun' && verb === 'test') return { kind: 'test', tool: 'bun test', signature: words };
    if (!name) return undefined;
    for (const [pattern, kind] of SCRIPT_KINDS) {
      if (pattern.test(name))
        return { kind, tool: `${head} ${name === 't' ? 'test' : name}`, signature: words };
    }
    return undefined;
  }
  if (head === 'node' && rest.includes('--test'))
    return { kind: 'test', tool: 'node --test', signature: words };
  if (head === 'prettier') {
    return rest.includes('--check') || rest.includes('-c')
      ? { kind: 'lint', tool: 'prettier', signature: words }
      : undefined;
  }
  const direct = DIRECT[head];
  if (direct) {
    // `vitest bench`, `vitest list`, `vitest watch`… are not checks; `vitest run [filter]` is.
    if (head === 'vitest' && ['bench', 'list', 'init', 'dev', 'watch'].includes(positional[0] ?? ''))
      return undefined;
    return { kind: direct, tool: head, signature: words };
  }
  const sub = SUBCOMMAND[head];
  const kind = sub?.[positional[0] ?? ''];
  if (kind) return { kind, tool: `${head} ${positional[0]}`, signature: words };
  return undefined;
}

/**
 * A passing run of `passing` also proves `failing` passes: the same check, or the same tool with
 * a subset of its arguments (`vitest run` covers `vitest run src/a.test.ts`), in the same directory.
 */
export function covers(passing: ShellCheck, failingKey: string): boolean {
  if (passing.key === failingKey) return true;
  const [cwd, label] = splitKey(failingKey);
  if (cwd !== splitKey(passing.key)[0] || label.includes(' && ')) return false;
  const failing = label.split(' ');
  return passing.checks.some(
    (check) => check.signature[0] === failing[0] && check.signature.every((word) => failing.includes(word)),
  );
}

function splitKey(key: string): [string, string] {
  const at = key.indexOf('::');
  return at < 0 ? ['', key] : [key.slice(0, at), key.slice(at + 2)];
}

function dropOptions(argv: (string | null)[]): (string | null)[] {
  let i = 0;
  while (i < argv.length && typeof argv[i] === 'string' && (argv[i] as string).startsWith('-')) {
    // npx --yes / -y / -p <pkg>
    i += argv[i] === '-p' || argv[i] === '--package' ? 2 : 1;
  }
  return argv.slice(i);
}
