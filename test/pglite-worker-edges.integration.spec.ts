/**
 * Edge cases of the embedded ledger's worker (src/ledger/pglite-worker.ts): writes sent together
 * are committed together and, when one fails, each runs again alone; statements are prepared once.
 * None of that may apply a write twice, lose one that was answered, answer a call with another's
 * rows, let a write from outside run inside (or be undone with) a caller's transaction, answer
 * with a table's old columns, or send a value otherwise than PGlite's own `query` does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { PgliteLedgerDatabase, type SqlQueries } from '../src/ledger/ledger-database.js';
import type { PgliteConnection } from '../src/ledger/pglite-connection.js';

let db: PgliteLedgerDatabase;
let reference: PGlite;
beforeAll(async () => {
  [db, reference] = await Promise.all([PgliteLedgerDatabase.open(), PGlite.create()]);
}, 60_000);
afterAll(async () => {
  await db?.close();
  await reference?.close();
});

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (rows) => ({ rows }),
    (error: { code?: string; message: string }) => ({ error: error.code ?? error.message }),
  );

describe('the PGlite worker at its edges', () => {
  it('applies each write of a group that fails at its commit once, not again when it reruns them alone', async () => {
    await db.query('CREATE TABLE parent (id int PRIMARY KEY)');
    await db.query('CREATE TABLE child (p int REFERENCES parent DEFERRABLE INITIALLY DEFERRED)');
    await db.query('CREATE TABLE counter (n int NOT NULL)');
    await db.query('INSERT INTO counter VALUES (0)');
    // One turn: every statement executes, then the commit (the Sync) fails on the deferred key.
    const sent = [
      db.query('UPDATE counter SET n = n + 1 RETURNING n'),
      db.query('INSERT INTO child VALUES (99)'),
      db.query('UPDATE counter SET n = n + 1 RETURNING n'),
    ];
    expect(await Promise.all(sent.map(outcome))).toEqual([
      { rows: [{ n: 1 }] },
      { error: '23503' },
      { rows: [{ n: 2 }] },
    ]);
    expect(await db.query('SELECT n FROM counter')).toEqual([{ n: 2 }]);
    expect(await db.query('SELECT count(*)::int AS n FROM child')).toEqual([{ n: 0 }]);
  });

  it('reruns only the group of 32 that failed, each write applied once', async () => {
    await db.query('CREATE TABLE tally (k int PRIMARY KEY)');
    await db.query('INSERT INTO tally VALUES (-1)');
    // 100 in one turn: groups of 32; the failing one (a duplicate) is in the second.
    const sent = Array.from({ length: 100 }, (_, i) =>
      db.query('INSERT INTO tally VALUES ($1) RETURNING k', [i === 40 ? -1 : i]),
    );
    const results = await Promise.all(sent.map(outcome));
    results.forEach((result, i) => expect(result).toEqual(i === 40 ? { error: '23505' } : { rows: [{ k: i }] }));
    expect(await db.query('SELECT count(*)::int AS n, sum(k)::int AS s FROM tally')).toEqual([
      { n: 100, s: 4950 - 40 - 1 },
    ]);
  });

  it('answers each call of a turn with its own rows: echoes, writes, failures, empty and sliced replies mixed', async () => {
    await db.query('CREATE TABLE mixed (k int PRIMARY KEY, v text)');
    const calls: Array<{ sent: Promise<unknown>; expected: unknown }> = [];
    for (let i = 0; i < 60; i++) {
      const kind = i % 6;
      if (kind === 0)
        calls.push({
          sent: db.query('SELECT $1::int AS i, $2::text AS t', [i, `t${i}`]),
          expected: { rows: [{ i, t: `t${i}` }] },
        });
      if (kind === 1)
        calls.push({
          sent: db.query('INSERT INTO mixed VALUES ($1, $2) RETURNING k, v', [i, `v${i}`]),
          expected: { rows: [{ k: i, v: `v${i}` }] },
        });
      if (kind === 2)
        calls.push({
          sent: db.query('INSERT INTO mixed VALUES ($1, $2) RETURNING k', [i - 1, 'dup']),
          expected: { error: '23505' },
        });
      if (kind === 3)
        calls.push({
          sent: db.query('WITH g AS (SELECT generate_series(1, $1::int) AS n) SELECT n FROM g', [600 + i]),
          expected: { rows: Array.from({ length: 600 + i }, (_, n) => ({ n: n + 1 })) },
        });
      if (kind === 4)
        calls.push({ sent: db.query('DELETE FROM mixed WHERE k = -$1::int RETURNING k', [i]), expected: { rows: [] } });
      if (kind === 5)
        calls.push({
          sent: db.query('UPDATE mixed SET v = $2 WHERE k = $1 RETURNING v', [i - 4, `u${i}`]),
          expected: { rows: [{ v: `u${i}` }] },
        });
    }
    for (const { sent, expected } of calls) expect(await outcome(sent)).toEqual(expected);
  });

  it('keeps writes of other callers out of a transaction that rolls back, and out of its sight', async () => {
    await db.query('CREATE TABLE apart2 (k text PRIMARY KEY)');
    const outside: Array<Promise<unknown>> = [];
    const rolledBack = db.transaction(async (tx) => {
      await tx.query("INSERT INTO apart2 VALUES ('inside-1')");
      // Concurrent callers while the transaction is open: they must wait for its end.
      for (let i = 0; i < 40; i++) outside.push(db.query('INSERT INTO apart2 VALUES ($1)', [`outside-${i}`]));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await Promise.all([
        tx.query("INSERT INTO apart2 VALUES ('inside-2')"),
        tx.query("INSERT INTO apart2 VALUES ('inside-3')"),
      ]);
      const seen = await tx.query<{ n: number }>("SELECT count(*)::int AS n FROM apart2 WHERE k LIKE 'outside%'");
      expect(seen).toEqual([{ n: 0 }]);
      throw new Error('undone');
    });
    await expect(rolledBack).rejects.toThrow('undone');
    await Promise.all(outside);
    expect(await db.query("SELECT count(*)::int AS n FROM apart2 WHERE k LIKE 'outside%'")).toEqual([{ n: 40 }]);
    expect(await db.query("SELECT count(*)::int AS n FROM apart2 WHERE k LIKE 'inside%'")).toEqual([{ n: 0 }]);
  });

  it('keeps writes sent beside a transaction whose COMMIT fails, and leaves no transaction open after it', async () => {
    await db.query('CREATE TABLE parent3 (id int PRIMARY KEY)');
    await db.query('CREATE TABLE child3 (p int REFERENCES parent3 DEFERRABLE INITIALLY DEFERRED)');
    const before = db.query('INSERT INTO parent3 VALUES (1)');
    const failing = db.transaction(async (tx) => {
      await Promise.all([tx.query('INSERT INTO child3 VALUES (1)'), tx.query('INSERT INTO child3 VALUES (2)')]);
    });
    const after = [db.query('INSERT INTO parent3 VALUES (2)'), db.query('INSERT INTO parent3 VALUES (3)')];
    expect(await outcome(failing)).toEqual({ error: '23503' });
    await Promise.all([before, ...after]);
    expect(await db.query('SELECT id FROM parent3 ORDER BY id')).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect(await db.query('SELECT count(*)::int AS n FROM child3')).toEqual([{ n: 0 }]);
    // Not left inside a transaction: a write now is committed, seen by a transaction that rolls back afterwards.
    await db.query('INSERT INTO parent3 VALUES (4)');
    await expect(db.transaction(() => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await db.query('SELECT count(*)::int AS n FROM parent3')).toEqual([{ n: 4 }]);
  });

  it('answers with the new columns after ALTER COLUMN TYPE and after DROP and CREATE with other types', async () => {
    await db.query('CREATE TABLE reshaped (k int, v int)');
    await db.query('INSERT INTO reshaped VALUES (1, 10)');
    const read = 'SELECT * FROM reshaped ORDER BY k';
    const write = 'INSERT INTO reshaped (k, v) VALUES ($1, $2) RETURNING *';
    expect(await db.query(read)).toEqual([{ k: 1, v: 10 }]);
    expect(await db.query(write, [2, 20])).toEqual([{ k: 2, v: 20 }]);
    await db.query('ALTER TABLE reshaped ALTER COLUMN v TYPE text USING v::text');
    expect(await db.query(read)).toEqual([
      { k: 1, v: '10' },
      { k: 2, v: '20' },
    ]);
    expect(await db.query(write, [3, '030'])).toEqual([{ k: 3, v: '030' }]);
    await db.query('DROP TABLE reshaped');
    await db.query('CREATE TABLE reshaped (k text, v jsonb)');
    expect(await db.query(write, ['4', { a: [1] }])).toEqual([{ k: '4', v: { a: [1] } }]);
    expect(await db.query(read)).toEqual([{ k: '4', v: { a: [1] } }]);
    // The same inside a transaction that rolls back: the old shape answered again after it.
    const undone = db.transaction(async (tx) => {
      await tx.query('DROP TABLE reshaped');
      await tx.query('CREATE TABLE reshaped (k bigint, v boolean, w date)');
      expect(await tx.query(write, [5, true])).toEqual([{ k: 5, v: true, w: null }]);
      throw new Error('undone');
    });
    await expect(undone).rejects.toThrow('undone');
    expect(await db.query(read)).toEqual([{ k: '4', v: { a: [1] } }]);
  });

  it('answers with the new columns after a schema change made by a function a SELECT calls', async () => {
    await db.query('CREATE TABLE fn_shaped (v int)');
    await db.query('INSERT INTO fn_shaped VALUES (1)');
    await db.query(`CREATE FUNCTION fn_reshape() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN DROP TABLE fn_shaped; CREATE TABLE fn_shaped (v text, w int); INSERT INTO fn_shaped VALUES ('x', 2); END $$`);
    const read = 'SELECT * FROM fn_shaped';
    expect(await db.query(read)).toEqual([{ v: 1 }]);
    await db.query('SELECT fn_reshape()');
    // PostgreSQL refuses a prepared statement whose columns changed (0A000): not for ever, not once.
    expect(await outcome(db.query(read))).toEqual({ rows: [{ v: 'x', w: 2 }] });
    expect(await outcome(db.query(read))).toEqual({ rows: [{ v: 'x', w: 2 }] });
  });

  it('answers from the table search_path names after SET search_path', async () => {
    await db.query('CREATE SCHEMA other');
    await db.query('CREATE TABLE pathed (v int)');
    await db.query('CREATE TABLE other.pathed (v text, w text)');
    await db.query("INSERT INTO other.pathed VALUES ('o', 'w')");
    await db.query('INSERT INTO pathed VALUES (1)');
    const read = 'SELECT * FROM pathed';
    expect(await db.query(read)).toEqual([{ v: 1 }]);
    try {
      await db.query('SET search_path TO other, public');
      expect(await outcome(db.query(read))).toEqual({ rows: [{ v: 'o', w: 'w' }] });
      expect(await outcome(db.query(read))).toEqual({ rows: [{ v: 'o', w: 'w' }] });
    } finally {
      await db.query('SET search_path TO public');
    }
  });

  it('fails a transaction whose statement meets its stale plan (0A000) whole, nothing kept, and answers it run again', async () => {
    await db.query('CREATE SCHEMA shadow');
    await db.query('CREATE TABLE shadowed (v int)');
    await db.query('CREATE TABLE shadow.shadowed (v text, w text)');
    await db.query("INSERT INTO shadow.shadowed VALUES ('s', 'w')");
    await db.query('CREATE TABLE paid (k text PRIMARY KEY, n int NOT NULL)');
    const read = 'SELECT * FROM shadowed';
    expect(await db.query(read)).toEqual([]);
    const work = async (tx: SqlQueries) => {
      await tx.query('INSERT INTO paid VALUES ($1, 1) ON CONFLICT (k) DO UPDATE SET n = paid.n + 1', ['k']);
      await tx.query('SET LOCAL search_path TO shadow, public');
      return tx.query(read);
    };
    // PostgreSQL aborted the transaction at the refused Bind: run again in it, the statement would
    // meet 25P02; the caller hears PostgreSQL's reason and its transaction rolls back whole.
    const beside = db.query("INSERT INTO paid VALUES ('beside', 1)");
    expect(await outcome(db.transaction(work))).toEqual({ error: '0A000' });
    await beside;
    expect(await db.query('SELECT k, n FROM paid ORDER BY k')).toEqual([{ k: 'beside', n: 1 }]);
    // Prepared anew meanwhile: the same transaction again is answered, its write applied once.
    expect(await db.transaction(work)).toEqual([{ v: 's', w: 'w' }]);
    expect(await db.query('SELECT k, n FROM paid ORDER BY k')).toEqual([
      { k: 'beside', n: 1 },
      { k: 'k', n: 1 },
    ]);
    expect(await db.query(read)).toEqual([]);
  });

  it('reruns alone, once each, a group whose write meets its stale plan after a function reshaped its table', async () => {
    await db.query('CREATE TABLE stale_group (k int PRIMARY KEY)');
    await db.query('CREATE TABLE stale_count (n int NOT NULL)');
    await db.query('INSERT INTO stale_count VALUES (0)');
    await db.query(`CREATE FUNCTION widen_stale_group() RETURNS int LANGUAGE plpgsql AS $$
      BEGIN ALTER TABLE stale_group ADD COLUMN w int NOT NULL DEFAULT 5; RETURN 1; END $$`);
    const insert = 'INSERT INTO stale_group VALUES ($1) RETURNING *';
    expect(await db.query(insert, [1])).toEqual([{ k: 1 }]);
    // One turn, one group: the second write's Bind is refused after the first reshaped the table.
    const sent = [
      db.query('UPDATE stale_count SET n = n + widen_stale_group() RETURNING n'),
      db.query(insert, [2]),
      db.query('UPDATE stale_count SET n = n + 1 RETURNING n'),
    ];
    expect(await Promise.all(sent.map(outcome))).toEqual([
      { rows: [{ n: 1 }] },
      { rows: [{ k: 2, w: 5 }] },
      { rows: [{ n: 2 }] },
    ]);
    expect(await db.query('SELECT n FROM stale_count')).toEqual([{ n: 2 }]);
  });

  it('sends and reads every kind of value as PGlite’s query does, alone and stored by grouped writes', async () => {
    const values: Array<[string, unknown]> = [
      ['text', null],
      ['text', undefined],
      ['text', ''],
      ['text', '\ud800'],
      ['text', '\udc00'],
      ['text', 'a\ud800b\udc00c'],
      ['text', '\udc00\ud800'],
      ['text', 'end\ud83d'],
      ['text', 'x'.repeat(1024 * 1024)],
      ['text', 'ی😀'.repeat(350_000)],
      ['text', '\ud83d'.repeat(300_000)],
      // NUL: refused in text (22021) and jsonb (22P05), kept escaped in json; never cut at it.
      ['text', 'a\u0000b'],
      ['text[]', ['a\u0000b']],
      ['json', { s: 'a\u0000b' }],
      ['jsonb', { s: 'a\u0000b' }],
      ['int', 0],
      ['int', -0],
      ['int', -2147483648],
      ['float8', 0.1 + 0.2],
      ['float8', 1e21],
      ['float8', 5e-324],
      ['float8', Number.NaN],
      ['float8', Number.POSITIVE_INFINITY],
      ['float8', -0],
      ['numeric', 1e21],
      ['numeric', '123456789012345678901234567890.000000001'],
      ['bigint', 9007199254740993n],
      ['bigint', -(2n ** 63n)],
      ['bigint', 2n ** 63n - 1n],
      ['bigint', Number.MAX_SAFE_INTEGER],
      ['numeric', 2n ** 100n],
      ['text', 12345678901234567890n],
      ['boolean', true],
      ['boolean', false],
      ['text', true],
      ['int', 3.0],
      ['jsonb', { s: 'é\u2028"\\', n: 1.5, big: 2n ** 64n, nested: [null, true, { deep: [] }] }],
      ['json', [1, 'two', null]],
      ['jsonb', 'a plain string'],
      ['jsonb', '"a JSON string"'],
      ['jsonb', 42],
      ['jsonb', null],
      ['json', { empty: '', lone: '\ud800' }],
      ['text[]', ['', null, 'a,b', '{}', '"', '\\']],
      ['int[]', []],
      ['bytea', new Uint8Array(0)],
      ['timestamptz', new Date(0)],
    ];
    for (const [type, value] of values) {
      const sql = `SELECT $1::${type} AS v`;
      const ours = await outcome(db.query(sql, [value]));
      const theirs = await outcome(reference.query(sql, [value]).then((r) => r.rows));
      expect({ type, value: String(value).slice(0, 40), ours }).toEqual({
        type,
        value: String(value).slice(0, 40),
        ours: theirs,
      });
    }
    // Stored by writes sent together (one group), read back one by one.
    const columns = [...new Set(values.map(([type]) => type))];
    const table = `CREATE TABLE kinds (i int PRIMARY KEY, ${columns.map((type, c) => `c${c} ${type}`).join(', ')})`;
    await Promise.all([db.query(table), reference.query(table)]);
    const insert = (i: number, type: string) =>
      `INSERT INTO kinds (i, c${columns.indexOf(type)}) VALUES ($1, $2) RETURNING *`;
    const ours = await Promise.all(values.map(([type, value], i) => outcome(db.query(insert(i, type), [i, value]))));
    const theirs: unknown[] = [];
    for (const [i, [type, value]] of values.entries()) {
      theirs.push(await outcome(reference.query(insert(i, type), [i, value]).then((r) => r.rows)));
    }
    ours.forEach((row, i) => expect({ i, row }).toEqual({ i, row: theirs[i] }));
    const readBack = 'SELECT * FROM kinds ORDER BY i';
    expect(await db.query(readBack)).toEqual((await reference.query(readBack)).rows);
  }, 60_000);

  it('fails a call whose value cannot be copied to the worker (a Promise), not the calls sent beside it', async () => {
    await db.query('CREATE TABLE uncopied (k text)');
    const sent = [
      db.query("INSERT INTO uncopied VALUES ('before')"),
      db.query('INSERT INTO uncopied VALUES ($1)', [Promise.resolve('never')]),
      db.query("INSERT INTO uncopied VALUES ('after') RETURNING k"),
    ];
    await expect(sent[1]).rejects.toThrow('could not be cloned');
    expect(await sent[2]).toEqual([{ k: 'after' }]);
    expect(await db.query('SELECT k FROM uncopied ORDER BY k')).toEqual([{ k: 'after' }, { k: 'before' }]);
  });

  it('binds 65 535 values, the most a Bind carries, and refuses one more with PostgreSQL’s error', async () => {
    const sql = (n: number) =>
      `SELECT cardinality(ARRAY[${Array.from({ length: n }, (_, i) => `$${i + 1}::int`).join(',')}]) AS n`;
    expect(await db.query(sql(65_535), new Array(65_535).fill(1))).toEqual([{ n: 65_535 }]);
    expect(await outcome(db.query(sql(65_536), new Array(65_536).fill(1)))).toEqual({ error: '08P01' });
  });
});

describe('the PGlite worker on disk', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'vgw-pglite-edges-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps every write it answered when its thread ends without closing PGlite, and fails the transaction it ended in', async () => {
    const db = await PgliteLedgerDatabase.open(dir);
    try {
      await db.query('CREATE TABLE kept (k int PRIMARY KEY)');
      // Grouped (one turn) and alone, one failing in the group: the others answered, so kept.
      const sent = Array.from({ length: 50 }, (_, i) =>
        outcome(db.query('INSERT INTO kept VALUES ($1)', [i === 7 ? 6 : i])),
      );
      const answered = await Promise.all(sent);
      await db.query('INSERT INTO kept VALUES (1000)');
      await db.transaction(async (tx) => tx.query('INSERT INTO kept VALUES (1001)'));
      expect(answered.filter((a) => 'error' in a)).toEqual([{ error: '23505' }]);
      // A crash inside a transaction: the thread ended at once, PGlite never told to close, and a
      // new worker open on the directory before the transaction's next statement, which must not
      // run there outside any transaction (nor its COMMIT answer for the write the crash undid).
      const ended = db.transaction(async (tx) => {
        await tx.query('INSERT INTO kept VALUES (2000)');
        await (db as unknown as { connection: PgliteConnection }).connection.terminate(new Error('crashed'));
        db.recoverNow();
        await db.serving();
        await tx.query('INSERT INTO kept VALUES (2001)');
      });
      expect(await outcome(ended)).toEqual({ error: 'crashed' });
      expect(await db.query('SELECT count(*)::int AS n, sum(k)::int AS s FROM kept')).toEqual([
        { n: 51, s: 1225 - 7 + 1000 + 1001 },
      ]);
    } finally {
      await db.close();
    }
  }, 60_000);
});
