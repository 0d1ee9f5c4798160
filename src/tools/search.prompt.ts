export const searchPrompt = `Search the workspace, as text or as code symbols.

- mode text (default): regular-expression search of file contents with ripgrep (pattern, literal, glob, path), like grep.
- mode symbol-overview: the symbols (classes, functions, methods, interfaces, types…) defined in a file, or in the files of a directory, with their kind, lines, name_path and symbol_key. Start here to understand a file's structure without reading it all.
- mode symbol-lookup: find definitions by name_path ("parseConfig", "UserService.save"; matches the end of the dotted path, a leading "/" anchors at top level) within path, or exactly by symbol_key. include_body returns their source.
- mode symbol-references: every use of one symbol (name_path or symbol_key, as in symbol-lookup), with path, line, column and the line's text.
- mode symbol-definition: where the name used at path, line (and column) is defined.

symbol-references, symbol-definition and edit's rename_symbol ask the file's language server when one handles it (engine "lsp": scope-aware, follows imports); otherwise tree-sitter answers by name (engine "tree-sitter", with a note on what it may get wrong).

Symbols come from tree-sitter parse trees for TypeScript, TSX, JavaScript, Python, Go, Rust, Java, Ruby, PHP, C# and C++. Use name_path or symbol_key with edit's structural modes (rename_symbol, replace_symbol_body, insert_before_symbol, insert_after_symbol).`;
