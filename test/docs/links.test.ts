/**
 * The README and the docs hold together: every relative link and anchor resolves, the docs index
 * lists every page, and the README opens with the two set-up commands.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const docs = readdirSync(join(root, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);
const pages = ['README.md', ...docs];

/** GitHub's heading anchors of a page (`## Session API` → `session-api`, repeats get `-1`, `-2`). */
const anchorCache = new Map<string, Set<string>>();
function anchors(path: string): Set<string> {
  const cached = anchorCache.get(path);
  if (cached) return cached;
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of read(path).split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const heading = fence ? null : /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    out.add(count ? `${slug}-${count}` : slug);
  }
  anchorCache.set(path, out);
  return out;
}

/** Relative markdown links of a page, outside code blocks and code spans. */
function links(path: string): string[] {
  const text = read(path)
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/.test(l));
}

describe('docs', () => {
  it('every relative link and anchor of the README and docs/ resolves', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const link of links(page)) {
        const [target, fragment] = link.split('#');
        const path = target ? normalize(join(dirname(page), target)) : page;
        if (!existsSync(join(root, path))) broken.push(`${page}: ${link} (no file ${path})`);
        else if (fragment && path.endsWith('.md') && !anchors(path).has(fragment)) {
          broken.push(`${page}: ${link} (no heading #${fragment} in ${path})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('the index (docs/README.md) links every page of docs/', () => {
    const listed = new Set(links('docs/README.md').map((l) => normalize(join('docs', l.split('#')[0]))));
    const missing = docs.filter((page) => page !== 'docs/README.md' && !listed.has(page));
    expect(missing, 'pages missing from docs/README.md').toEqual([]);
    expect(links('README.md')).toContain('docs/README.md');
  });

  it('the README opens with the two commands that set everything up', () => {
    const readme = read('README.md');
    const first = readme.split('```sh\n')[1]?.split('```')[0] ?? '';
    expect(readme.split('```sh\n')[0].trim()).toBe('# svc');
    expect(first).toMatch(/^npm ci && npx svc\b/m);
    expect(first).toMatch(/^npm ci && npm test\b/m);
    expect(readme).toMatch(/Node\.js 20, 22 or 24/);
  });
});
