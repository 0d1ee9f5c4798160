/**
 * Markdown → terminal text: marked's lexer, our own renderer to ANSI (chalk), code blocks
 * highlighted. The output is plain lines that Ink wraps; under NO_COLOR it stays readable
 * (markers like `#`, `-`, backticks-free code indented).
 * @module
 */
import chalk from 'chalk';
import { lexer, type Token, type Tokens } from 'marked';
import { highlight } from './highlight';

export function renderMarkdown(source: string): string {
  try {
    return blocks(lexer(source))
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trimEnd();
  } catch {
    return source;
  }
}

function blocks(tokens: Token[], depth = 0): string[] {
  const out: string[] = [];
  for (const token of tokens) {
    const text = block(token, depth);
    if (text !== undefined) out.push(text);
  }
  return out;
}

function block(token: Token, depth: number): string | undefined {
  switch (token.type) {
    case 'space':
      return undefined;
    case 'heading': {
      const t = token as Tokens.Heading;
      const body = inline(t.tokens);
      return `${chalk.bold(t.depth <= 2 ? chalk.underline(body) : body)}\n`;
    }
    case 'paragraph':
      return `${inline((token as Tokens.Paragraph).tokens)}\n`;
    case 'text': {
      const t = token as Tokens.Text;
      return t.tokens ? inline(t.tokens) : t.text;
    }
    case 'code': {
      const t = token as Tokens.Code;
      const lang = t.lang?.split(/\s/)[0];
      const code = highlight(t.text, lang);
      const label = lang ? chalk.gray(`  ${lang}`) : '';
      return `${label ? `${label}\n` : ''}${code
        .split('\n')
        .map((line) => `  ${line}`)
        .join('\n')}\n`;
    }
    case 'blockquote': {
      const t = token as Tokens.Blockquote;
      return blocks(t.tokens, depth)
        .join('\n')
        .trimEnd()
        .split('\n')
        .map((line) => chalk.gray('│ ') + chalk.italic(line))
        .join('\n')
        .concat('\n');
    }
    case 'list': {
      const t = token as Tokens.List;
      const start = typeof t.start === 'number' ? t.start : 1;
      const lines = t.items.map((item, index) => {
        const bullet = t.ordered ? `${start + index}.` : item.task ? (item.checked ? '[x]' : '[ ]') : '•';
        const body = blocks(item.tokens, depth + 1)
          .join('\n')
          .trimEnd();
        const indent = ' '.repeat(bullet.length + 1);
        return `${bullet} ${body.split('\n').join(`\n${indent}`)}`;
      });
      return `${lines.map((l) => `${'  '.repeat(depth ? 1 : 0)}${l}`).join('\n')}\n`;
    }
    case 'hr':
      return chalk.gray('─'.repeat(40));
    case 'table': {
      const t = token as Tokens.Table;
      const header = t.header.map((c) => inline(c.tokens));
      const rows = t.rows.map((r) => r.map((c) => inline(c.tokens)));
      const widths = header.map((h, i) => Math.max(visible(h), ...rows.map((r) => visible(r[i] ?? ''))));
      const line = (cells: string[]) =>
        cells.map((c, i) => c + ' '.repeat(Math.max(0, widths[i] - visible(c)))).join(chalk.gray(' │ '));
      return [
        chalk.bold(line(header)),
        chalk.gray(widths.map((w) => '─'.repeat(w)).join('─┼─')),
        ...rows.map(line),
      ]
        .join('\n')
        .concat('\n');
    }
    case 'html':
      return (token as Tokens.HTML).text;
    case 'def':
      return undefined;
    default:
      return 'raw' in token ? String(token.raw) : undefined;
  }
}

function inline(tokens: Token[] | undefined): string {
  if (!tokens) return '';
  return tokens
    .map((token) => {
      switch (token.type) {
        case 'strong':
          return chalk.bold(inline((token as Tokens.Strong).tokens));
        case 'em':
          return chalk.italic(inline((token as Tokens.Em).tokens));
        case 'del':
          return chalk.strikethrough(inline((token as Tokens.Del).tokens));
        case 'codespan':
          return chalk.level === 0
            ? `\`${(token as Tokens.Codespan).text}\``
            : chalk.yellow((token as Tokens.Codespan).text);
        case 'link': {
          const t = token as Tokens.Link;
          const label = inline(t.tokens);
          return label === t.href
            ? chalk.blue.underline(t.href)
            : `${chalk.blue(label)} ${chalk.gray(`(${t.href})`)}`;
        }
        case 'image':
          return chalk.gray(`[image: ${(token as Tokens.Image).text || (token as Tokens.Image).href}]`);
        case 'br':
          return '\n';
        case 'text': {
          const t = token as Tokens.Text;
          return t.tokens ? inline(t.tokens) : decode(t.text);
        }
        case 'escape':
          return (token as Tokens.Escape).text;
        case 'html':
          return (token as Tokens.HTML).text;
        default:
          return 'raw' in token ? String(token.raw) : '';
      }
    })
    .join('');
}

const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
};
function decode(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m] ?? m);
}

const ANSI = /\x1b\[[0-9;]*m/g;
function visible(text: string): number {
  return text.replace(ANSI, '').length;
}
