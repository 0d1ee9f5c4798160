export const viewPrompt = `Read a file in the workspace.

- Text comes back with line numbers, one line per row as "<number><TAB><text>". The numbers are not part of the file: never copy them into edit's old_string.
- By default up to 400 lines from the top. For long files pass offset (0-based line index) and limit; when the answer says it was truncated, call again with the offset it gives.
- Lines longer than 2000 characters are cut.
- Images (png, jpeg, gif, webp; up to 5 MB) are attached so you can look at them. Other binary files are refused.
- Reading a file is what allows editing it: edit, multiedit and write (over an existing file) refuse files you have not viewed in this session, or that changed on disk since you viewed them.
- Paths are relative to the workspace root; paths outside the workspace are refused.
- To find files use glob or ls; to search contents use grep. Prefer view over cat/head/tail in bash.`;
