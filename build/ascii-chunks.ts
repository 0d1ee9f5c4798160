// Every chunk of the build written as ASCII (issue 17, start-up): one non-ASCII character (an
// ellipsis in a message, an arrow in a comment) makes V8 hold the whole source as a two-byte
// string: Node's UTF-8 read of the 1.1 MB tools chunk took ~3.7 ms instead of ~1.2 ms, and each
// chunk's source, which V8 keeps for the functions it compiles on first call, took twice the heap
// (`svc run`'s peak RSS 115 -> 110 MiB with every chunk ASCII).
//
// A non-ASCII character becomes its `\uXXXX` escape, which means the same character in a string,
// template, regular expression, identifier or comment. Left as they are: whitespace and line
// terminators (an escape is not whitespace) and a character after a backslash (`"\…"` would turn
// into `"\\u2026"`); a chunk that keeps any is reported by ENGINE-BUNDLE-2. Astral characters are
// escaped as their two UTF-16 code units, as the source holds them.

/** `code` with every non-ASCII character that can be escaped written as `\uXXXX`. */
export function asciiOnly(code: string): string {
  if (!/[^\x00-\x7f]/.test(code)) return code;
  let out = '';
  let last = 0;
  for (let i = 0; i < code.length; i++) {
    const unit = code.charCodeAt(i);
    if (unit < 0x80 || /\s/.test(code[i]) || escapedAt(code, i)) continue;
    out += `${code.slice(last, i)}\\u${unit.toString(16).padStart(4, '0')}`;
    last = i + 1;
  }
  return out + code.slice(last);
}

/** Is the character at `i` preceded by an odd number of backslashes? */
function escapedAt(code: string, i: number): boolean {
  let n = 0;
  while (i - n - 1 >= 0 && code.charCodeAt(i - n - 1) === 92) n++;
  return n % 2 === 1;
}

/** A JavaScript chunk of the output bundle, as far as this plugin reads and writes it. */
interface OutputChunkLike {
  type: string;
  code?: string;
}

/**
 * The rolldown plugin: each output chunk through `asciiOnly`, once the bundle is complete
 * (`renderChunk` is too early: the final code generation writes the escapes back as characters).
 */
export function asciiChunks(): {
  name: string;
  generateBundle(options: unknown, bundle: Record<string, OutputChunkLike>): void;
} {
  return {
    name: 'svc-ascii-chunks',
    generateBundle(_options, bundle) {
      for (const chunk of Object.values(bundle)) {
        if (chunk.type === 'chunk' && typeof chunk.code === 'string') chunk.code = asciiOnly(chunk.code);
      }
    },
  };
}
