/**
 * Code highlighting (issue 17, item 4: highlight.js's core and the common grammars at start, any
 * other grammar on first use). Pins: the ANSI output for the 37 languages lowlight's `common` set
 * registered (and the usual aliases) is byte for byte what it was with lowlight
 * (highlight.golden.json, recorded before the change); a rarer language is plain on its first
 * block and highlighted once its grammar has loaded, by name or alias; names highlight.js does not
 * know stay plain; the alias table matches the installed highlight.js.
 */
import chalk from 'chalk';
import hljs from 'highlight.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { highlight, loadHighlighter, loadLanguage } from './highlight';
import golden from './highlight.golden.json';
import { grammarFile } from './highlight-languages';

const level = chalk.level;
beforeAll(async () => {
  chalk.level = 3;
  await loadHighlighter();
});
afterAll(() => {
  chalk.level = level;
});

describe('highlight', () => {
  it('gives the output it gave with lowlight for the common languages', async () => {
    for (const [key, sample] of Object.entries(golden)) {
      await loadLanguage(sample.language === 'shell' ? 'bash' : sample.language);
      expect(highlight(sample.code, sample.language), key).toBe(sample.ansi);
    }
  });

  it('highlights a rarer language once its grammar has loaded, by name or alias', async () => {
    const code = 'main :: IO ()\nmain = putStrLn "hi" -- greet';
    expect(highlight(code, 'haskell')).toBe(code);
    await expect(loadLanguage('haskell')).resolves.toBe(true);
    expect(highlight(code, 'haskell')).toContain('\x1b[');
    expect(highlight(code, 'HS')).toBe(highlight(code, 'haskell'));

    const dockerfile = 'FROM node:20\nRUN npm ci # deps';
    await expect(loadLanguage('docker')).resolves.toBe(true);
    expect(highlight(dockerfile, 'docker')).toContain('\x1b[');
  });

  it('leaves unknown languages plain', async () => {
    for (const name of ['nosuchlang', '../core', 'languages/bash', '']) {
      await expect(loadLanguage(name)).resolves.toBe(false);
      expect(highlight('x = 1', name)).toBe('x = 1');
    }
  });

  it('knows every grammar and alias of the installed highlight.js', () => {
    for (const name of hljs.listLanguages()) {
      expect(grammarFile(name), name).toBe(name);
      for (const alias of hljs.getLanguage(name)?.aliases ?? []) {
        const owner = hljs.getLanguage(alias);
        if (owner === hljs.getLanguage(name)) expect(grammarFile(alias), alias).toBe(name);
      }
    }
  });
});
