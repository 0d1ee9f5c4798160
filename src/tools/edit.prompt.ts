export const editPrompt = `Edit a file in the workspace.

Default mode (replace): replace old_string with new_string exactly.
- View the file first in this session; the edit is refused if you have not, or if it changed on disk since.
- old_string must match the file exactly, whitespace and indentation included, without the line-number prefix that view shows.
- Small slips are tolerated when they leave exactly one place: line endings, trailing whitespace, indentation shifted or tabs for spaces (new_string is then re-indented to the file's indentation), spacing inside lines, view line numbers, or one near-identical line inside a block whose first and last lines match. The result's match field says how old_string was found. Anything looser, or a match in two places, is refused with the closest region of the file and what differs; nothing is guessed.
- It must match exactly one place; include a few surrounding lines to make it unique, or set replace_all to change every occurrence (renaming a variable in one file, for instance).
- An empty old_string creates the file with new_string as its content (only when it does not exist yet).
- For several changes to one file use multiedit; to replace a whole file use write.

Structural modes work on symbols (functions, classes, methods, interfaces, types…) in TypeScript, JavaScript, Python, Go, Rust, Java, Ruby, PHP, C# and C++, parsed with tree-sitter; pick the symbol with name_path (e.g. "UserService.save", as search's symbol-overview prints it) or symbol_key (the exact key search returns):
- rename_symbol: rename the symbol's definition and its references in every file under scope (default: the whole workspace); new_name is the new identifier. The file's language server computes the edits when one handles it (engine "lsp": only this symbol, not same-named ones elsewhere); otherwise tree-sitter renames every identifier with that name (engine "tree-sitter", with a note). A rename that would edit a file outside the workspace or under node_modules is refused.
- replace_symbol_body: replace the symbol's whole definition with new_string.
- insert_before_symbol / insert_after_symbol: insert new_string on its own lines before / after the symbol's definition.

apply_patch mode changes several files at once: give the whole patch in patch (mode apply_patch, or patch alone). Two formats are read:
- Codex patches: "*** Begin Patch", then sections "*** Add File: <path>" (every line of the new file starts with +), "*** Delete File: <path>", "*** Update File: <path>" (optionally followed by "*** Move to: <new path>") with hunks that start with "@@" or "@@ <a line to find first, such as a def or class line>" and lines starting with a space (context), - (remove) or + (add); "*** End of File" after a hunk that ends the file; then "*** End Patch".
- Unified diffs: "--- a/<path>" and "+++ b/<path>" headers (/dev/null to create or delete a file), "@@ -l,c +l,c @@" hunks, git headers such as rename from/to.
Give three lines of context around each change; hunks must be in file order. Whitespace and typographic-quote differences in context are tolerated, but nothing is guessed: if any hunk does not match, nothing is written and the error names the file, the hunk and the closest lines found. No prior view is needed (the context is checked against the current file).
Every edit asks for approval with the diff and is recorded in the session's file history.`;
