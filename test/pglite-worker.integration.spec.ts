/**
 * The embedded ledger's worker (src/ledger/pglite-worker.ts) runs each SQL text as a statement
 * prepared once, and commits writes that wait together in one transaction (docs/performance.md,
 * "Single-node records"). Neither may change an answer: rows and values as PGlite's own `query`
 * gives and takes them, a failed write undoes none of the others sent with it, a statement whose
 * columns changed under it (ALTER TABLE) is answered anew, and statements beyond the ones kept
 * prepared are still served.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { PgliteLedgerDatabase } from '../src/ledger/ledger-database.js';

let db: PgliteLedgerDatabase;
beforeAll(async () => {
  db = await PgliteLedgerDatabase.open();
}, 60_000);
afterAll(() => db?.close());

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: { code?: string }) => error.code,
  );

describe('the PGlite worker', () => {
  it('binds values and reads rows exactly as PGlite’s query does', async () => {
    const reference = await PGlite.create();
    try {
      const same = async (sql: string, params: unknown[] = []) =>
        expect(await db.query(sql, params)).toEqual((await reference.query(sql, params)).rows);
      await same(
        `SELECT $1::text AS t, $2::int AS i, $3::bigint AS b, $4::numeric AS n, $5::boolean AS yes,
          $6::jsonb AS j, $7::timestamptz AS at, $8::text[] AS list, $9::text AS nothing, $10::date AS day,
          $11::uuid AS id, $12::int[] AS ints, $13::float8 AS f, $14::text AS empty, $15::bytea AS raw`,
        [
          'it\'s ی 😀 \\ "',
          42,
          '9007199254740993',
          '12.5000',
          true,
          { a: [1, 'x'], b: null },
          new Date('2026-11-28T10:00:00.123Z'),
          ['a', 'b,c', 'd"e'],
          null,
          '2026-02-28',
          '0f8fad5b-d9cb-469f-a165-70867728950e',
          [1, 2, 3],
          0.1,
          '',
          new Uint8Array([0, 1, 254, 255]),
        ],
      );
      // Duplicate column names: the last one wins, as in `query`.
      await same('SELECT 1 AS a, 2 AS a');
      // Values and replies larger than the buffers the worker starts with (64 KiB), many rows.
      const big = 'ی😀x'.repeat(60_000);
      await same('SELECT $1::text AS big, length($1::text) AS n', [big]);
      await same("SELECT g AS n, repeat('r', g % 300) AS r FROM generate_series(1, 5000) g");
    } finally {
      await reference.close();
    }
  });

  it('fails a statement with PostgreSQL’s error and all its fields, as PGlite’s query does', async () => {
    const reference = await PGlite.create();
    try {
      const schema = 'CREATE TABLE failing (k text CONSTRAINT failing_key PRIMARY KEY)';
      await Promise.all([db.query(schema), reference.query(schema)]);
      const insert = 'INSERT INTO failing VALUES ($1)';
      await Promise.all([db.query(insert, ['x']), reference.query(insert, ['x'])]);
      const fields = (error: unknown) => {
        const {
          code,
          detail,
          constraint,
          table,
          schema: inSchema,
          severity,
          message,
        } = error as Record<string, unknown>;
        return { code, detail, constraint, table, schema: inSchema, severity, message };
      };
      const ours = await db.query(insert, ['x']).catch(fields);
      const theirs = await reference.query(insert, ['x']).catch(fields);
      expect(ours).toEqual(theirs);
      expect(ours).toMatchObject({ code: '23505', constraint: 'failing_key', table: 'failing' });
    } finally {
      await reference.close();
    }
  });

  it('commits writes sent together, and a failed one undoes none of the others', async () => {
    await db.query('CREATE TABLE together (k text PRIMARY KEY, v int NOT NULL)');
    await db.query("INSERT INTO together VALUES ('taken', 0)");
    // One turn: one message, run as one transaction until the duplicate fails it; then each alone.
    const sent = [
      db.query("INSERT INTO together VALUES ('a', 1) RETURNING k"),
      db.query('UPDATE together SET v = v + 1 WHERE k = $1 RETURNING v', ['a']),
      db.query("INSERT INTO together VALUES ('taken', 9)"),
      db.query("INSERT INTO together VALUES ('b', 2) RETURNING k"),
      db.query('DELETE FROM together WHERE k = $1 RETURNING k', ['nothing']),
    ];
    const [a, bumped, duplicate, b, none] = await Promise.allSettled(sent);
    expect(a).toEqual({ status: 'fulfilled', value: [{ k: 'a' }] });
    expect(bumped).toEqual({ status: 'fulfilled', value: [{ v: 2 }] });
    expect(duplicate.status === 'rejected' && (duplicate.reason as { code?: string }).code).toBe('23505');
    expect(b).toEqual({ status: 'fulfilled', value: [{ k: 'b' }] });
    expect(none).toEqual({ status: 'fulfilled', value: [] });
    expect(await db.query('SELECT k, v FROM together ORDER BY k')).toEqual([
      { k: 'a', v: 2 },
      { k: 'b', v: 2 },
      { k: 'taken', v: 0 },
    ]);
    // Nothing left open: the next write commits on its own.
    await db.query("INSERT INTO together VALUES ('c', 3)");
    expect(await db.query("SELECT count(*)::int AS n FROM together WHERE k = 'c'")).toEqual([{ n: 1 }]);
  });

  it('keeps a transaction’s statements apart from writes sent beside it', async () => {
    await db.query('CREATE TABLE apart (k text PRIMARY KEY)');
    const outside = db.query("INSERT INTO apart VALUES ('outside')");
    const rolledBack = db
      .transaction(async (tx) => {
        await tx.query("INSERT INTO apart VALUES ('inside')");
        throw new Error('undone');
      })
      .catch((error: Error) => error.message);
    const after = db.query("INSERT INTO apart VALUES ('after')");
    await Promise.all([outside, after]);
    expect(await rolledBack).toBe('undone');
    expect(await db.query('SELECT k FROM apart ORDER BY k')).toEqual([{ k: 'after' }, { k: 'outside' }]);
  });

  it('answers a statement anew when its columns changed under the prepared one', async () => {
    await db.query('CREATE TABLE altered (k text)');
    await db.query("INSERT INTO altered VALUES ('x')");
    const sql = 'SELECT * FROM altered';
    expect(await db.query(sql)).toEqual([{ k: 'x' }]);
    await db.query('ALTER TABLE altered ADD COLUMN v int NOT NULL DEFAULT 7');
    expect(await db.query(sql)).toEqual([{ k: 'x', v: 7 }]);
    // A change rolled back with its transaction: what was prepared in it is prepared again after.
    const undone = db.transaction(async (tx) => {
      await tx.query('ALTER TABLE altered DROP COLUMN v');
      expect(await tx.query(sql)).toEqual([{ k: 'x' }]);
      throw new Error('undone');
    });
    await expect(undone).rejects.toThrow('undone');
    expect(await db.query(sql)).toEqual([{ k: 'x', v: 7 }]);
  });

  it('serves more distinct statements than it keeps prepared, the first again at the end', async () => {
    // PREPARED_KEPT in pglite-worker.ts is 200 (that module runs only as a worker: not imported here).
    const texts = Array.from({ length: 220 }, (_, i) => `SELECT ${i}::int AS n, $1::text AS t`);
    for (const [i, sql] of texts.entries()) expect(await db.query(sql, [`v${i}`])).toEqual([{ n: i, t: `v${i}` }]);
    expect(await db.query(texts[0], ['again'])).toEqual([{ n: 0, t: 'again' }]);
  });

  it('answers a statement that does not parse, or has the wrong number of values, with PostgreSQL’s error', async () => {
    expect(await codeOf(db.query('SELEC 1'))).toBe('42601');
    expect(await codeOf(db.query('SELECT $1::int + $2::int AS n', [1]))).toBe('08P01');
    expect(await db.query('SELECT $1::int + $2::int AS n', [1, 2])).toEqual([{ n: 3 }]);
  });
});
