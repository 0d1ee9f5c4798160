/**
 * File → language by extension or well-known file name, for the codebase summary and the
 * workspace snapshot. Files of no listed language count as `other` (data, images, lockfiles…).
 * @module
 */
import { basename, extname } from 'node:path';

const BY_EXTENSION: Record<string, string> = {
  '.ts': 'TypeScript',
  '.tsx': 'TypeScript',
  '.mts': 'TypeScript',
  '.cts': 'TypeScript',
  '.js': 'JavaScript',
  '.jsx': 'JavaScript',
  '.mjs': 'JavaScript',
  '.cjs': 'JavaScript',
  '.py': 'Python',
  '.pyi': 'Python',
  '.go': 'Go',
  '.rs': 'Rust',
  '.java': 'Java',
  '.kt': 'Kotlin',
  '.kts': 'Kotlin',
  '.scala': 'Scala',
  '.swift': 'Swift',
  '.m': 'Objective-C',
  '.c': 'C',
  '.h': 'C',
  '.cc': 'C++',
  '.cpp': 'C++',
  '.cxx': 'C++',
  '.hpp': 'C++',
  '.hh': 'C++',
  '.cs': 'C#',
  '.fs': 'F#',
  '.rb': 'Ruby',
  '.php': 'PHP',
  '.pl': 'Perl',
  '.lua': 'Lua',
  '.r': 'R',
  '.jl': 'Julia',
  '.dart': 'Dart',
  '.ex': 'Elixir',
  '.exs': 'Elixir',
  '.erl': 'Erlang',
  '.hs': 'Haskell',
  '.ml': 'OCaml',
  '.clj': 'Clojure',
  '.zig': 'Zig',
  '.nim': 'Nim',
  '.sh': 'Shell',
  '.bash': 'Shell',
  '.zsh': 'Shell',
  '.fish': 'Shell',
  '.ps1': 'PowerShell',
  '.sql': 'SQL',
  '.html': 'HTML',
  '.htm': 'HTML',
  '.css': 'CSS',
  '.scss': 'SCSS',
  '.sass': 'SCSS',
  '.less': 'Less',
  '.vue': 'Vue',
  '.svelte': 'Svelte',
  '.astro': 'Astro',
  '.md': 'Markdown',
  '.mdx': 'Markdown',
  '.rst': 'reStructuredText',
  '.json': 'JSON',
  '.jsonc': 'JSON',
  '.yaml': 'YAML',
  '.yml': 'YAML',
  '.toml': 'TOML',
  '.xml': 'XML',
  '.proto': 'Protocol Buffers',
  '.graphql': 'GraphQL',
  '.gql': 'GraphQL',
  '.tf': 'Terraform',
  '.sol': 'Solidity',
};

const BY_NAME: Record<string, string> = {
  Dockerfile: 'Dockerfile',
  Makefile: 'Makefile',
  GNUmakefile: 'Makefile',
  'CMakeLists.txt': 'CMake',
  Rakefile: 'Ruby',
  Gemfile: 'Ruby',
  Justfile: 'Just',
  justfile: 'Just',
};

/** Languages that are program code (not markup, data or config), for the "primary language". */
export const DATA_LANGUAGES = new Set(['Markdown', 'reStructuredText', 'JSON', 'YAML', 'TOML', 'XML']);

export function languageOf(path: string): string | undefined {
  const name = basename(path);
  if (BY_NAME[name]) return BY_NAME[name];
  if (name.startsWith('Dockerfile.')) return 'Dockerfile';
  return BY_EXTENSION[extname(name).toLowerCase()];
}

/** Files per language, most files first (ties by name); files of no known language under `other`. */
export function languageCounts(files: readonly string[]): { language: string; files: number }[] {
  const counts = new Map<string, number>();
  for (const file of files) {
    const language = languageOf(file) ?? 'other';
    counts.set(language, (counts.get(language) ?? 0) + 1);
  }
  return [...counts.entries()]
    .map(([language, n]) => ({ language, files: n }))
    .sort((a, b) => {
      if (a.language === 'other') return 1;
      if (b.language === 'other') return -1;
      return b.files - a.files || a.language.localeCompare(b.language);
    });
}
