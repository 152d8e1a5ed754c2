import { describe, expect, it } from '@jest/globals';
import { printableJson } from './parked-entries.js';

describe('printableJson', () => {
  it('escapes what JSON.stringify leaves raw (DEL, C1 controls, U+2028, U+2029), and stays the same JSON', () => {
    const entry = { clientId: 'a\u0085b\u009f\u007f\u0080', requestId: 'x\u2028y\u2029z', other: 'ی😀\\"\u0000\ud800' };
    const json = JSON.stringify(entry);
    expect(json).toMatch(/[\u007f-\u009f\u2028\u2029]/);

    const text = printableJson(json);
    expect(text).not.toMatch(/[\u007f-\u009f\u2028\u2029]/);
    expect(text).toContain(String.raw`"a\u0085b\u009f\u007f\u0080"`);
    expect(text).toContain(String.raw`"x\u2028y\u2029z"`);
    expect(JSON.parse(text)).toEqual(entry);
  });
});
