/**
 * The embedded ledger runs a parameterised statement as one simple-query `exec` with its values
 * written in as literals (src/ledger/sql-literals.ts), not as PGlite's bound `query`. Here each
 * statement runs both ways on one PGlite, and both must come out the same: the rows with their
 * JavaScript types, the columns' types, what is stored, the error. Hostile values (quotes,
 * backslashes, `$1`, comment and dollar-quote marks, unicode, 1 MB, edge numbers) and
 * fast-check's; where the two ways are known to differ, the last block pins how.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite, type Results } from '@electric-sql/pglite';
import fc from 'fast-check';
import { inlineParameters } from '../src/ledger/sql-literals.js';

let db: PGlite;
beforeAll(async () => {
  db = await PGlite.create('memory://');
  await db.exec(`CREATE TABLE t (s text, i int, b bigint, f float8, n numeric, ok boolean, j jsonb, ts timestamptz)`);
}, 60_000);
afterAll(() => db?.close());

type Outcome = { rows: unknown[][]; types: number[]; stored: unknown[][] } | { error: string };
/** Rows as arrays: two columns of one name (`?column?`) would be one key of an object. */
const ARRAYS = { rowMode: 'array' } as const;

/** The statement's rows and what table t holds after it, in a transaction rolled back. */
async function outcome(run: () => Promise<Results | undefined>): Promise<Outcome> {
  await db.exec('BEGIN');
  try {
    const result = await run();
    const stored = await db.query<unknown[]>('SELECT * FROM t', [], ARRAYS);
    return {
      rows: (result?.rows ?? []) as unknown[][],
      types: result?.fields.map((field) => field.dataTypeID) ?? [],
      stored: stored.rows,
    };
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return { error: `${code ?? 'no code'}: ${message}` };
  } finally {
    await db.exec('ROLLBACK');
  }
}

const bound = (sql: string, params: unknown[]) => outcome(() => db.query(sql, params, ARRAYS));

/** Written in, as the worker runs it where it can. */
function inlined(sql: string, params: unknown[]): Promise<Outcome> {
  const text = inlineParameters(sql, params);
  if (text === undefined) throw new Error(`not written in: ${sql}`);
  return outcome(async () => (await db.exec(text, ARRAYS)).at(-1));
}

/** As the worker runs it (src/ledger/pglite-worker.ts): written in where sql-literals.ts can, else bound. */
function asTheWorker(sql: string, params: unknown[]): Promise<Outcome> {
  const text = inlineParameters(sql, params);
  return text === undefined ? bound(sql, params) : outcome(async () => (await db.exec(text, ARRAYS)).at(-1));
}

const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Same outcome both ways, with as many of `values` as the statement has placeholders (a value too
 * many is refused bound only). `errors: 'any'` takes any error for any other: of two bad values,
 * one in a literal cast (`'x'::bigint`) is read as the statement is parsed, so named first;
 * bound, the values are read in order.
 */
async function expectSame(sql: string, values: unknown[], errors: 'same' | 'any' = 'same'): Promise<void> {
  const params = values.slice(0, Math.max(0, ...Array.from(sql.matchAll(/\$(\d+)/g), (match) => Number(match[1]))));
  const label = `${sql} with ${JSON.stringify(params).slice(0, 200)}`;
  // Written in (else both ways are the bound one: nothing compared), but for a lone surrogate (below).
  const staysBound = params.some((param) => typeof param === 'string' && LONE_SURROGATE.test(param));
  expect({ label, writtenIn: inlineParameters(sql, params) !== undefined }).toEqual({ label, writtenIn: !staysBound });
  const compared = (outcome: Outcome) => (errors === 'any' && 'error' in outcome ? { error: 'any' } : outcome);
  expect({ label, outcome: compared(await asTheWorker(sql, params)) }).toEqual({
    label,
    outcome: compared(await bound(sql, params)),
  });
}

const MEGABYTE = 'x'.repeat(1 << 20);
/** Texts that would end a literal, start a comment or a placeholder, or change its bytes. */
const TEXTS = [
  "o'brien",
  "''",
  "'",
  '\\',
  "\\'",
  "'\\",
  "'); DROP TABLE t; --",
  "' || (SELECT 'injected') || '",
  '$1',
  '$2',
  '$$',
  '$a$',
  "E'\\x41'",
  '*/',
  '/*',
  '--',
  '"',
  '\\x41',
  '\u2028\u2029',
  '\u200f\u202e',
  '😀',
  '\ud800',
  '\udfff',
  'a\udfffb\ud83d',
  'é\udfff',
  '\u2028\udfff\u2028\udfff',
  '\ufeff',
  '',
  ' ',
  '\n\r\t',
  'ی',
  '%_\\%',
];
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  -5,
  0.1,
  1.5,
  1e21,
  1e-7,
  5e-324,
  Number.MAX_VALUE,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  -Number.MAX_SAFE_INTEGER,
  2147483647,
  2147483648,
  -2147483648,
  -2147483649,
];

describe('a statement with its values written in does what the bound one does', () => {
  it('texts: stored and returned exactly, none escapes its literal', async () => {
    for (const text of TEXTS)
      for (const sql of [
        'SELECT $1',
        'INSERT INTO t (s) VALUES ($1) RETURNING s',
        'SELECT $1 || $1, length($1), $1 = $2',
        'SELECT $1 LIKE $2, $2 LIKE $1',
        'SELECT s IN ($1, $2) FROM (VALUES ($2)) v(s)',
        'SELECT $1::jsonb',
        'SELECT $1::int',
      ])
        await expectSame(sql, [text, `${text}'`]);
  });

  it('a text of a megabyte', async () => {
    for (const sql of ['INSERT INTO t (s) VALUES ($1) RETURNING s', "SELECT $1 = $2, $1 || 'x'"])
      await expectSame(sql, [`'${MEGABYTE}\\`, `'${MEGABYTE}\\`]);
  });

  it('numbers: as text, integer, bigint, float8, numeric, jsonb, and compared with a text', async () => {
    for (const number of NUMBERS)
      for (const sql of [
        'SELECT $1',
        'INSERT INTO t (s) VALUES ($1) RETURNING s',
        'INSERT INTO t (i) VALUES ($1) RETURNING i',
        'INSERT INTO t (b) VALUES ($1) RETURNING b',
        'INSERT INTO t (f) VALUES ($1) RETURNING f',
        'INSERT INTO t (n) VALUES ($1) RETURNING n',
        'INSERT INTO t (j) VALUES ($1) RETURNING j',
        'SELECT $1::bigint, 10 - $1::bigint, 10-$1::bigint, -$1::bigint',
        'SELECT x - $1 FROM (VALUES (10::bigint)) v(x)',
        'SELECT 10 - $1, 10-$1, 10 - -$1::int',
        'SELECT s = $1 FROM (VALUES ($2)) v(s)',
        'SELECT $1 IN ($2, 1, 2)',
        'SELECT $1::bigint = $2::numeric',
      ])
        await expectSame(sql, [number, String(number)]);
  });

  it('booleans and nulls: as a boolean, a text, jsonb, an integer', async () => {
    for (const value of [true, false, null, undefined])
      for (const sql of [
        'SELECT $1',
        'INSERT INTO t (ok) VALUES ($1) RETURNING ok',
        'INSERT INTO t (s) VALUES ($1) RETURNING s',
        'INSERT INTO t (j) VALUES ($1) RETURNING j',
        'SELECT CASE WHEN $1 THEN 1 ELSE 0 END, $1 IS NULL',
        'SELECT $1::int',
        "SELECT $1 = 't', 'x' || $1",
      ])
        await expectSame(sql, [value]);
  });

  it('a lone surrogate stays bound: written in, PGlite would send the statement without its end', async () => {
    // PGlite's protocol writer (pg-protocol's byteLengthUtf8) counts a lone trail surrogate after a
    // 2-byte character 1 byte short, and ends the text there: here the statement's ` WHERE i = 1`.
    const sql = 'UPDATE t SET s = $1 WHERE i = 1';
    const value = 'é\udfff'.repeat(' WHERE i = 1'.length);
    const rows = "INSERT INTO t (i, s) VALUES (1, 'one'), (2, 'two')";
    const worker = await outcome(async () => {
      await db.exec(rows);
      const text = inlineParameters(sql, [value]);
      return text === undefined ? db.query(sql, [value], ARRAYS) : (await db.exec(text, ARRAYS)).at(-1);
    });
    // Bound, the value loses its last bytes instead (a cut character: refused).
    expect(worker).toEqual({ error: '22021: invalid byte sequence for encoding "UTF8": 0xef' });
    expect(inlineParameters(sql, [value])).toBeUndefined();
    // What a bound value loses: its last bytes, silently where they are whole characters.
    expect(await bound('SELECT $1', ['é\udfffabc'])).toMatchObject({ rows: [['é\ufffdab']] });
  });

  it('a $n inside dollar quoting or a name, or $0, is not a placeholder: such a statement stays bound', async () => {
    for (const sql of [
      'SELECT $q1$ $1 $q1$, $1',
      'SELECT $é$ $1 $é$, $1',
      "SELECT $a1$'$a1$, $1, '$1'",
      'SELECT a$1, $1 FROM (SELECT 1 AS a$1) s',
      'SELECT $0, $1',
    ])
      expect({ sql, outcome: await asTheWorker(sql, ['x']) }).toEqual({ sql, outcome: await bound(sql, ['x']) });
  });

  it('a hundred placeholders, $10 not read as $1 followed by 0', async () => {
    const params = Array.from({ length: 100 }, (_, i) => TEXTS[i % (TEXTS.length - 1)] + String(i));
    await expectSame(`SELECT ${params.map((_, i) => `$${i + 1}`).join(', ')}`, params);
  });

  it('JSON texts into json and jsonb (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.json(), async (json) => {
        await expectSame('INSERT INTO t (j) VALUES ($1) RETURNING j', [json]);
        await expectSame('SELECT $1::json, $1::jsonb', [json]);
      }),
      { numRuns: 100 },
    );
  });

  // The pieces that would end a literal or change its bytes; NUL stays bound (sql-literals.spec.ts).
  const PIECES = ["'", "''", '\\', '"', '$', '$1', '--', '/*', '*/', 'E', ';', '\ud800', '\udfff', '😀', '\u2028', ' '];
  const hostile = fc.string({
    unit: fc.oneof(
      fc.constantFrom(...PIECES),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => c !== '\0'),
    ),
    maxLength: 16,
  });
  const value = fc.oneof(
    hostile,
    fc.integer(),
    fc.maxSafeInteger(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
  );
  const STATEMENTS = [
    'SELECT $1',
    'INSERT INTO t (s) VALUES ($1) RETURNING s',
    'INSERT INTO t (i, b, n) VALUES ($1, $2::bigint, $3) RETURNING *',
    'INSERT INTO t (f) VALUES ($1) RETURNING f',
    'SELECT $1::jsonb',
    'SELECT x - $1 FROM (VALUES (10::bigint)) v(x)',
    'SELECT $1 LIKE $2',
    'SELECT $1 IN ($2, $3)',
    'SELECT s = $1 FROM (VALUES ($2)) v(s)',
  ];

  it('any text, number, boolean or null in any of these statements (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...STATEMENTS),
        fc.array(value, { minLength: 3, maxLength: 3 }),
        async (sql, params) => {
          await expectSame(sql, params, 'any');
        },
      ),
      { numRuns: 300 },
    );
  });
});

/**
 * Where the two ways are known to differ. None of the gateway's statements does any of this
 * (checked by running the ledger's integration specs with both ways compared per statement);
 * a new statement must not either.
 */
describe('where they differ', () => {
  it('a value used twice is typed at each use, not once for all as a bound parameter', async () => {
    // The bound $1 is an integer (from `= 1`), so its column too; written in, the second is a text.
    expect(await bound('SELECT $1 = 1, $1', ['5'])).toEqual({ rows: [[false, 5]], types: [16, 23], stored: [] });
    expect(await inlined('SELECT $1 = 1, $1', ['5'])).toEqual({ rows: [[false, '5']], types: [16, 25], stored: [] });
    // The bound $1 is a bigint in `10 - $1` too; written in, an integer there, which overflows.
    expect(await bound('SELECT $1::bigint, 10 - $1', [-2147483647])).toMatchObject({
      rows: [[-2147483647, 2147483657]],
    });
    expect(await inlined('SELECT $1::bigint, 10 - $1', [-2147483647])).toEqual({
      error: '22003: integer out of range',
    });
    // Refused bound (two types for one parameter); written in, each use takes its own.
    expect(await bound('INSERT INTO t (i, s) VALUES ($1, $1)', [5])).toMatchObject({
      error: expect.stringMatching(/^42P08/),
    });
    expect(await inlined('INSERT INTO t (i, s) VALUES ($1, $1)', [5])).toMatchObject({
      stored: [['5', 5, null, null, null, null, null, null]],
    });
  });

  it('a placeholder alone as an ORDER BY, GROUP BY or DISTINCT ON item: a constant bound, refused written in', async () => {
    // Written in, it is a constant that is not a column's number (`ORDER BY 'x'`), which PostgreSQL refuses.
    for (const [sql, clause] of [
      ['SELECT x FROM (VALUES (2), (1)) v(x) ORDER BY $1, x', 'ORDER BY'],
      ['SELECT count(*) FROM (VALUES (2), (1)) v(x) GROUP BY $1', 'GROUP BY'],
      ['SELECT DISTINCT ON ($1) x FROM (VALUES (2), (1)) v(x)', 'DISTINCT ON'],
    ]) {
      expect(await bound(sql, [1])).toMatchObject({ rows: expect.any(Array) });
      expect(await inlined(sql, [1])).toEqual({ error: `42601: non-integer constant in ${clause}` });
    }
  });

  it('a number where a timestamp is expected: milliseconds since 1970 bound, refused written in', async () => {
    const ms = Date.UTC(2026, 0, 2);
    expect(await bound('SELECT $1::timestamptz', [ms])).toMatchObject({ rows: [[new Date(ms)]] });
    expect(await inlined('SELECT $1::timestamptz', [ms])).toMatchObject({ error: expect.stringMatching(/^22008/) });
  });

  it('where a boolean is expected, space that JavaScript trims and PostgreSQL does not: taken bound only', async () => {
    expect(await bound('SELECT $1::boolean', ['\u00a0true'])).toMatchObject({ rows: [[true]] });
    expect(await inlined('SELECT $1::boolean', ['\u00a0true'])).toMatchObject({
      error: expect.stringMatching(/^22P02/),
    });
  });

  it('what PGlite refuses before PostgreSQL sees it, written in PostgreSQL takes', async () => {
    // A text as bytea, a prefix of `true` as a boolean (PostgreSQL's own input takes both).
    expect(await bound('SELECT $1::bytea', ['\\x41'])).toEqual({ error: 'no code: Invalid input for bytea type' });
    expect(await inlined('SELECT $1::bytea', ['\\x41'])).toMatchObject({ rows: [[Uint8Array.of(0x41)]] });
    expect(await bound('SELECT $1::boolean', ['tr'])).toEqual({ error: 'no code: Invalid input for boolean type' });
    expect(await inlined('SELECT $1::boolean', ['tr'])).toMatchObject({ rows: [[true]] });
    // More values than placeholders.
    expect(await bound('SELECT $1', ['a', 'b'])).toMatchObject({ error: expect.stringMatching(/^08P01/) });
    expect(await inlined('SELECT $1', ['a', 'b'])).toMatchObject({ rows: [['a']] });
    // A parameter whose type nothing says (PostgreSQL takes a literal's as text).
    for (const sql of ['SELECT $1 IS NULL', "SELECT concat($1, 'x')", "SELECT jsonb_build_object('k', $1)"]) {
      expect(await bound(sql, ['5'])).toEqual({ error: '42P18: could not determine data type of parameter $1' });
      expect(await inlined(sql, ['5'])).toMatchObject({ rows: [[expect.anything()]] });
    }
  });
});
