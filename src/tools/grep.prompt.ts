export const grepPrompt = `Search file contents in the workspace with ripgrep.

- pattern is a regular expression (Rust regex syntax: \\bword\\b, foo|bar, \\d+); set literal: true to search for the text as is (brackets, dots and parentheses then need no escaping).
- Files ignored by .gitignore are skipped, hidden files are searched, .git is not.
- Narrow with path (a directory or file) and glob (file names, e.g. "*.ts", "src/**/*.{ts,tsx}", "!*.test.ts").
- output_mode: content (default; matching lines with line numbers, grouped by file), files (only the paths), count (matches per file).
- context adds lines around each match; case_insensitive and multiline (patterns spanning lines) are off by default.
- Results are sorted by path and capped by limit (default 100); when truncated, narrow the search rather than raising the limit.`;
