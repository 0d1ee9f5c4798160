/**
 * Markdown → Preact elements from marked's tokens, never through innerHTML: raw HTML in model
 * output shows as text, links keep only http(s) and mailto targets, images become links (the
 * page loads nothing from elsewhere). Code blocks are highlighted.
 * @module
 */
import { lexer, type Token, type Tokens } from 'marked';
import type { ComponentChildren, JSX } from 'preact';
import { highlightCode } from './highlight';

export function Markdown({ source }: { source: string }): JSX.Element {
  let tokens: Token[];
  try {
    tokens = lexer(source);
  } catch {
    return <p class="md-plain">{source}</p>;
  }
  return <div class="md">{blocks(tokens, 'b')}</div>;
}

function blocks(tokens: Token[], key: string): ComponentChildren[] {
  return tokens.map((token, i) => block(token, `${key}.${i}`));
}

function block(token: Token, key: string): ComponentChildren {
  switch (token.type) {
    case 'space':
      return null;
    case 'heading': {
      const t = token as Tokens.Heading;
      const Tag = `h${Math.min(6, Math.max(3, t.depth + 2))}` as 'h3';
      return <Tag key={key}>{inline(t.tokens, key)}</Tag>;
    }
    case 'paragraph':
      return <p key={key}>{inline((token as Tokens.Paragraph).tokens, key)}</p>;
    case 'text': {
      const t = token as Tokens.Text;
      return <span key={key}>{t.tokens ? inline(t.tokens, key) : t.text}</span>;
    }
    case 'code': {
      const t = token as Tokens.Code;
      const lang = t.lang?.split(/\s/)[0] || undefined;
      return <CodeBlock key={key} code={t.text} lang={lang} />;
    }
    case 'blockquote':
      return <blockquote key={key}>{blocks((token as Tokens.Blockquote).tokens, key)}</blockquote>;
    case 'list': {
      const t = token as Tokens.List;
      const items = t.items.map((item, i) => (
        <li key={`${key}.${i}`}>
          {item.task ? <input type="checkbox" checked={item.checked} disabled aria-label="task" /> : null}
          {blocks(item.tokens, `${key}.${i}`)}
        </li>
      ));
      return t.ordered ? (
        <ol key={key} start={typeof t.start === 'number' ? t.start : undefined}>
          {items}
        </ol>
      ) : (
        <ul key={key}>{items}</ul>
      );
    }
    case 'table': {
      const t = token as Tokens.Table;
      return (
        <div key={key} class="table-wrap">
          <table>
            <thead>
              <tr>
                {t.header.map((cell, i) => (
                  <th key={i}>{inline(cell.tokens, `${key}.h${i}`)}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {t.rows.map((row, r) => (
                <tr key={r}>
                  {row.map((cell, i) => (
                    <td key={i}>{inline(cell.tokens, `${key}.${r}.${i}`)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      );
    }
    case 'hr':
      return <hr key={key} />;
    case 'html':
      return (
        <p key={key} class="md-plain">
          {(token as Tokens.HTML).text}
        </p>
      );
    default:
      return 'text' in token && typeof token.text === 'string' ? <p key={key}>{token.text}</p> : null;
  }
}

function inline(tokens: Token[] | undefined, key: string): ComponentChildren[] {
  return (tokens ?? []).map((token, i) => inlineToken(token, `${key}.${i}`));
}

function inlineToken(token: Token, key: string): ComponentChildren {
  switch (token.type) {
    case 'text': {
      const t = token as Tokens.Text;
      return t.tokens ? <span key={key}>{inline(t.tokens, key)}</span> : decode(t.text);
    }
    case 'escape':
      return decode((token as Tokens.Escape).text);
    case 'strong':
      return <strong key={key}>{inline((token as Tokens.Strong).tokens, key)}</strong>;
    case 'em':
      return <em key={key}>{inline((token as Tokens.Em).tokens, key)}</em>;
    case 'del':
      return <del key={key}>{inline((token as Tokens.Del).tokens, key)}</del>;
    case 'codespan':
      return <code key={key}>{decode((token as Tokens.Codespan).text)}</code>;
    case 'br':
      return <br key={key} />;
    case 'link': {
      const t = token as Tokens.Link;
      const target = safeHref(t.href);
      const children = inline(t.tokens, key);
      return target ? (
        <a key={key} href={target} target="_blank" rel="noopener noreferrer">
          {children}
        </a>
      ) : (
        <span key={key}>{children}</span>
      );
    }
    case 'image': {
      const t = token as Tokens.Image;
      const target = safeHref(t.href);
      return target ? (
        <a key={key} href={target} target="_blank" rel="noopener noreferrer">
          [image: {t.text || target}]
        </a>
      ) : (
        `[image: ${t.text}]`
      );
    }
    case 'html':
      return (token as Tokens.HTML).text;
    default:
      return 'text' in token && typeof token.text === 'string' ? decode(token.text) : null;
  }
}

export function CodeBlock({ code, lang }: { code: string; lang?: string }): JSX.Element {
  return (
    <div class="code">
      {lang ? <div class="code-lang">{lang}</div> : null}
      <pre>
        <code>{highlightCode(code, lang)}</code>
      </pre>
    </div>
  );
}

function safeHref(href: string): string | undefined {
  try {
    const url = new URL(href);
    return url.protocol === 'http:' || url.protocol === 'https:' || url.protocol === 'mailto:'
      ? url.href
      : undefined;
  } catch {
    return undefined;
  }
}

/** marked escapes inline text as HTML entities; elements render text, so undo that. */
function decode(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) => ENTITIES[name] ?? _);
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" };
