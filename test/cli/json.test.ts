// Unit tests for the CLI's strict JSON parser (src/cli/json.ts): it accepts what JSON.parse accepts and
// gives the same value, and refuses duplicate keys (by path), deep nesting and bad tokens with a
// position, without overflowing the stack on megabytes of input.

import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { brief, parseStrictJson } from '../../src/cli/json.ts';

const fieldOf = (text: string, root = ''): string => {
  try {
    parseStrictJson(text, 'SPEC', root);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as InputError).field;
  }
  throw new Error('expected an error');
};

describe('parseStrictJson', () => {
  it('parses what JSON.parse parses, to the same value', () => {
    for (const text of [
      '{"a": [1, -2.5e3, true, false, null, "x\\n\\u00e9\\"\\\\"], "b": {"c": {}}, "d": []}',
      ' [ ] ',
      '"\\ud83d\\ude00"',
      '0',
      '{"__proto__": {"x": 1}}',
    ]) {
      expect(parseStrictJson(text, 'SPEC')).toEqual(JSON.parse(text));
    }
    const proto = parseStrictJson('{"__proto__": 1}', 'SPEC') as Record<string, unknown>;
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    expect(Object.keys(proto)).toEqual(['__proto__']);
  });
  it('refuses what JSON.parse refuses', () => {
    for (const text of ['', '{', '{"a": 1,}', '[1,]', '01', '1.', '"\\x"', '"a\nb"', 'nul', '{"a" 1}', '{} x', "{'a': 1}", '"\\u12"']) {
      expect(() => JSON.parse(text)).toThrow();
      expect(fieldOf(text)).toBe('SPEC');
    }
  });
  it('names a duplicate key by its path', () => {
    expect(fieldOf('{"a": 1, "a": 2}')).toBe('a');
    expect(fieldOf('{"p": [{"s": 1}, {"s": 1, "s": 2}]}')).toBe('p[1].s');
    expect(fieldOf('[{"min": 1, "min": 2}]', 'pipeline')).toBe('pipeline[0].min');
    // a key that is not an identifier, whole and quoted: never an empty field, nor another key's path
    expect(fieldOf('{"": 1, "": 2}')).toBe('[""]');
    expect(fieldOf('{"p": {"a.b": 1, "a.b": 2}}')).toBe('p["a.b"]');
    expect(fieldOf('{"a b": {"c": [1e400]}}')).toBe('["a b"].c[0]');
  });
  it("refuses a number past a double's range by its path, where JSON.parse reads 0 or Infinity", () => {
    expect(JSON.parse('1e-400')).toBe(0);
    expect(fieldOf('{"pipeline": [{"scale": 1e-400}]}')).toBe('pipeline[0].scale');
    expect(fieldOf('[1, -2.5e-999]', '--pipeline')).toBe('--pipeline[1]');
    expect(fieldOf('{"shift": 1e400}')).toBe('shift');
    expect(fieldOf('-1E+309')).toBe('SPEC');
    expect(() => parseStrictJson('{"m": 0.0000e-400}', 'SPEC')).not.toThrow(); // a zero written as one
    expect(() => parseStrictJson('{"scale": 1e-400}', 'SPEC')).toThrow(
      /^scale: 1e-400 is too small: it would read as 0 \(line 1 column 11\); a number must lie within a double's range$/,
    );
    expect(() => parseStrictJson('[1e400]', 'SPEC')).toThrow(/\[0\]: 1e400 is too large: it would read as infinite/);
    expect(parseStrictJson('[5e-324, 1.7976931348623157e308, -0]', 'SPEC')).toEqual([5e-324, 1.7976931348623157e308, -0]);
  });
  it('limits nesting to 32 levels', () => {
    expect(parseStrictJson(`${'['.repeat(32)}${']'.repeat(32)}`, 'SPEC')).toBeDefined();
    expect(() => parseStrictJson(`${'['.repeat(33)}${']'.repeat(33)}`, 'SPEC')).toThrow(/nested deeper than 32 levels at line 1 column 33/);
    expect(() => parseStrictJson('['.repeat(1_000_000), 'SPEC')).toThrow(/nested deeper/);
  });
  it('scans megabytes of string, escapes included, without a stack overflow', () => {
    expect((parseStrictJson(`"${'a'.repeat(8 << 20)}"`, 'SPEC') as string).length).toBe(8 << 20);
    expect((parseStrictJson(`"${'\\n'.repeat(4 << 20)}"`, 'SPEC') as string).length).toBe(4 << 20);
  });
  it('reports line and column', () => {
    expect(() => parseStrictJson('{\n  "a": 1,\n  "b": ?\n}', 'SPEC')).toThrow(/line 3 column 8/);
  });
});

describe('brief', () => {
  it('cuts long strings and never prints containers whole', () => {
    expect(brief('x'.repeat(1000))).toBe(`"${'x'.repeat(100)}"... (1000 characters)`);
    expect(brief([1, 2, 3])).toBe('an array of 3');
    expect(brief({ a: 1 })).toBe('an object');
    expect(brief(null)).toBe('null');
    expect(brief(3.5)).toBe('3.5');
    expect(brief(undefined)).toBe('nothing (missing)');
  });
});
