import { describe, expect, it } from '@jest/globals';
import { inlineParameters } from './sql-literals.js';

describe('inlineParameters', () => {
  it('writes each value in as a quoted literal, typed by its context as an untyped parameter is', () => {
    expect(
      inlineParameters('UPDATE t SET v = $2, n = $3::bigint, ok = $4 WHERE k = $1 AND x IS $5', [
        "o'brien",
        'a\\b',
        1795913528151,
        true,
        null,
      ]),
    ).toBe("UPDATE t SET v =  E'a\\\\b', n = '1795913528151'::bigint, ok = 'true' WHERE k = 'o''brien' AND x IS NULL");
  });

  it('leaves quoted text alone, and $10 is not $1 followed by 0', () => {
    const params = Array.from({ length: 10 }, (_, i) => `v${i + 1}`);
    expect(inlineParameters(`SELECT '$1', "$2", $10, $1`, params)).toBe(`SELECT '$1', "$2", 'v10', 'v1'`);
  });

  it('leaves to a bound query what a literal would not say exactly', () => {
    for (const value of [[1, 2], { a: 1 }, 10n, Number.NaN, Infinity, 'a\0b', 'é\udfff', '\ud800', new Date(0)])
      expect(inlineParameters('SELECT $1', [value])).toBeUndefined();
    for (const sql of [
      'SELECT $$ $1 $$, $1',
      'SELECT $tag$x$tag$, $1',
      "SELECT E'\\'', $1",
      "SELECT $1 -- the claim's",
      'SELECT /* $1 */ $1',
      'SELECT $q1$ $1 $q1$, $1',
      'SELECT $é$ $1 $é$, $1',
      'SELECT a$1, $1 FROM (SELECT 1 AS a$1) s',
      'SELECT $0, $1',
    ])
      expect(inlineParameters(sql, ['x'])).toBeUndefined();
    // A placeholder without its value.
    expect(inlineParameters('SELECT $1, $2', ['x'])).toBeUndefined();
  });

  it('past the texts it remembers (MAX_CUTS), a new text is still written in right', () => {
    for (let i = 0; i < 1_100; i++) expect(inlineParameters(`SELECT ${i}, $1`, [`v${i}`])).toBe(`SELECT ${i}, 'v${i}'`);
  });

  it('a statement without parameters is itself', () => {
    expect(inlineParameters('SELECT 1')).toBe('SELECT 1');
  });
});
