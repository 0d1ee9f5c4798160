/**
 * Recipes shipped with svc (source `builtin`). A workspace `.svc/recipes/<name>.toml` or a user
 * `<config dir>/svc/recipes/<name>.toml` of the same name replaces one. Kept as TOML text, in the
 * same format users write, so they double as examples.
 * @module
 */

export const BUILTIN_RECIPES: Readonly<Record<string, string>> = {
  'review-changes': `
description = "Review the working tree's changes against a base revision and report problems by file and line"

[[parameters]]
name = "base"
type = "string"
description = "Git revision to compare against (default HEAD: the uncommitted changes)."
default = "HEAD"

[[parameters]]
name = "focus"
type = "string"
description = "What to look for."
default = "correctness, security, error handling and missing tests"

[[steps]]
id = "collect"
agent = "general"
description = "Collect the diff and summarize each change"
tools = ["bash", "view", "grep", "glob", "ls"]
max_turns = 15
prompt = """
Collect the changes to review. Run \`git diff {{ base }} --stat\`, \`git diff {{ base }}\` and \`git status --short\` (untracked files count as changes: view them).
Answer with a list of the changed files, and for each a two-line summary of what changed. Quote nothing longer than a few lines. Do not edit anything.
"""

[[steps]]
id = "review"
agent = "general"
description = "Review the changes"
tools = ["bash", "view", "grep", "glob", "ls", "search"]
max_turns = 30
prompt = """
Review these changes (against {{ base }}) for {{ focus }}.

The changes:
{{ steps.collect.output }}

Read the changed code and what it calls. Report each finding as: severity (high, medium, low), file:line, the problem, and a concrete fix. End with a one-line verdict. Do not edit files.
"""
`,

  'fix-failing-tests': `
description = "Run the test command, find why tests fail, fix the code (not the tests' intent) until it passes"
max_turns = 40

[retry]
attempts = 2

[[parameters]]
name = "test_command"
type = "command"
description = "The command line that runs the tests (run as written: give it yourself, never from a step's output)."
default = "npm test"

[[parameters]]
name = "scope"
type = "string"
description = "Optional focus: a test file, a package, a failing test name."
default = ""

[[steps]]
id = "diagnose"
agent = "general"
description = "Run the tests and find the causes"
tools = ["bash", "view", "grep", "glob", "ls", "search"]
max_turns = 20
prompt = """
Run \`{{ test_command }}\` (focus: {{ scope }}). For every failing test, find the cause in the code: the file and line, what the test expects, what the code does.
Do not edit anything. Answer with one entry per failure. If everything passes, say so.
"""

[[steps]]
id = "fix"
agent = "general"
description = "Fix the causes"
prompt = """
Fix the failing tests found below. Change the code under test; change a test only when it is plainly wrong, and say why. Keep changes minimal.
Run \`{{ test_command }}\` until it passes, then report what you changed.

What the diagnosis found:
{{ steps.diagnose.output }}
"""

[[steps.expect]]
command = "{{ test_command }}"
description = "the tests pass"
timeout_seconds = 600
`,

  'write-tests': `
description = "Write tests for a file or symbol in the project's own test style, and make sure they pass"
max_turns = 40

[retry]
attempts = 1

[[parameters]]
name = "target"
type = "string"
description = "What to cover: a file path, or a function or class name."
required = true

[[parameters]]
name = "test_command"
type = "command"
description = "The command line that runs the tests (run as written: give it yourself, never from a step's output)."
default = "npm test"

[[steps]]
id = "survey"
agent = "explore"
description = "Learn the test conventions and the target"
max_turns = 20
prompt = """
Find how this project writes tests: the framework, where test files live, how they are named, the helpers they use. Then read {{ target }} and list its behaviours worth testing (normal cases, edge cases, errors).
Answer with the conventions (with one example test file path) and the list of behaviours.
"""

[[steps]]
id = "write"
agent = "general"
description = "Write the tests"
prompt = """
Write tests for {{ target }} following the project's conventions, one test per behaviour. Run \`{{ test_command }}\` and make them pass without changing the code under test (report a real bug instead of hiding it).

Conventions and behaviours:
{{ steps.survey.output }}
"""

[[steps.expect]]
command = "{{ test_command }}"
description = "the tests pass"
timeout_seconds = 600
`,
};
