export const bashPrompt = `Run a shell command with bash in the workspace.

- The working directory persists between calls in this session (a cd sticks); environment variables and shell functions do not. It starts at the workspace root, and is reset there if a command leaves the workspace.
- stdout and stderr come back merged, with the exit code. Output over the limit (30,000 bytes by default) keeps its beginning and end; the full text is saved to the file named in output_file (read it with view or grep).
- Commands time out after timeout_seconds (default 120, at most 600); the command and everything it started are stopped.
- Long-running processes (dev servers, watchers) need run_in_background: true; you get a job_id at once. Read what it printed with job_output and stop it with job_kill.
- No terminal and no input: interactive prompts fail. Use non-interactive flags (git commit -m, npm init -y, --yes).
- Every command is parsed before it runs. Read-only commands (git status/diff/log, ls, cat, rg…) may run without asking; anything that writes, redirects to a file, uses $(…) substitution or runs programs asks the operator first. Some commands are blocked outright: sudo, rm -rf of / or ~ or the workspace, writes outside the workspace, curl|sh, disk formatting, shutdown, and what permissions.bash_deny lists.
- Prefer the dedicated tools: view (not cat/head/tail), grep (not grep/rg), glob/ls (not find/ls), edit/write (not sed/echo >).`;
