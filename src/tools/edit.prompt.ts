export const editPrompt = `Edit a file in the workspace.

Default mode (replace): replace old_string with new_string exactly.
- View the file first in this session; the edit is refused if you have not, or if it changed on disk since.
- old_string must match the file exactly, whitespace and indentation included, without the line-number prefix that view shows.
- It must match exactly one place; include a few surrounding lines to make it unique, or set replace_all to change every occurrence (renaming a variable in one file, for instance).
- An empty old_string creates the file with new_string as its content (only when it does not exist yet).
- For several changes to one file use multiedit; to replace a whole file use write.

Structural modes work on symbols (functions, classes, methods, interfaces, types…) in TypeScript, JavaScript, Python, Go, Rust, Java, Ruby, PHP, C# and C++, parsed with tree-sitter; pick the symbol with name_path (e.g. "UserService.save", as search's symbol-overview prints it) or symbol_key (the exact key search returns):
- rename_symbol: rename the symbol's definition and its references (identifier matches) in every file under path (default: the whole workspace); new_name is the new identifier.
- replace_symbol_body: replace the symbol's whole definition with new_string.
- insert_before_symbol / insert_after_symbol: insert new_string on its own lines before / after the symbol's definition.
Every edit asks for approval with the diff and is recorded in the session's file history.`;
