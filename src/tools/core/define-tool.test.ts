import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from './define-tool';

describe('defineTool', () => {
  it('keeps an input schema given as it is', () => {
    const input = z.strictObject({ a: z.string() });
    const tool = defineTool({
      name: 't',
      family: 'test',
      tag: 'primitive',
      description: 't',
      input,
      mutates: false,
      run: () => 1,
    });
    expect(tool.input).toBe(input);
  });

  it('builds an input given as a function on its first read, once', () => {
    let built = 0;
    const tool = defineTool({
      name: 't',
      family: 'test',
      tag: 'primitive',
      description: 't',
      input: () => {
        built++;
        return z.strictObject({ a: z.string() });
      },
      mutates: false,
      run: (_ctx, input) => input.a,
    });
    expect(built).toBe(0);
    const first = tool.input;
    expect(tool.input).toBe(first);
    expect(built).toBe(1);
    expect(first.parse({ a: 'x' })).toEqual({ a: 'x' });
  });
});
