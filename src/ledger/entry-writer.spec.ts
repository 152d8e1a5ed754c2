import { describe, expect, it } from '@jest/globals';
import { EntryWriter, refusalOf, type Refusal } from './entry-writer.js';
import type { QueuedEntry } from './ledger-entry.js';
import { queuedEntry } from '../../test/support/ledger-entries.js';

/** A database error as pg and PGlite raise it: a message and its SQLSTATE. */
function sqlError(code: string, message = 'refused'): Error {
  return Object.assign(new Error(message), { code });
}

const entry = (trackId: string, overrides: Partial<QueuedEntry> = {}) => queuedEntry({ trackId, ...overrides });

/**
 * A store that refuses every statement holding a trackId of `bad` (as PostgreSQL refuses a
 * whole statement), or fails with `outage` while it is set; records the written ones and the
 * statements.
 */
function fakes(bad: Set<string>) {
  const written: string[] = [];
  const parked: Array<{ trackId: string; refusal: Refusal }> = [];
  const state = { statements: 0, outage: undefined as Error | undefined, parkingFails: false };
  const store = {
    insert(entries: readonly QueuedEntry[]): Promise<number> {
      state.statements += 1;
      if (state.outage) return Promise.reject(state.outage);
      if (entries.some((e) => bad.has(e.trackId))) return Promise.reject(sqlError('22P02', 'invalid input syntax'));
      const fresh = entries.filter((e) => !written.includes(e.trackId));
      written.push(...fresh.map((e) => e.trackId));
      return Promise.resolve(fresh.length);
    },
  };
  const parking = {
    park(refusedEntry: QueuedEntry, refusal: Refusal): Promise<void> {
      if (state.parkingFails) return Promise.reject(new Error('connection terminated'));
      if (!parked.some((p) => p.trackId === refusedEntry.trackId))
        parked.push({ trackId: refusedEntry.trackId, refusal });
      return Promise.resolve();
    },
  };
  return { writer: new EntryWriter(store, parking), written, parked, state };
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);

describe('EntryWriter', () => {
  it('writes a clean batch in one statement', async () => {
    const { writer, written, state } = fakes(new Set());
    expect(await writer.write(ids(1000).map((id) => entry(id)))).toEqual({ written: 1000, parked: [] });
    expect(written).toHaveLength(1000);
    expect(state.statements).toBe(1);
  });

  it('isolates each refused entry by halving, parks it with the SQLSTATE, writes all the others', async () => {
    const bad = new Set(['t3', 't500', 't999']);
    const { writer, written, parked, state } = fakes(bad);
    const result = await writer.write(ids(1000).map((id) => entry(id)));
    expect(result.written).toBe(997);
    expect(result.parked.map((p) => p.entry.trackId).sort()).toEqual([...bad].sort());
    expect(parked.map((p) => p.refusal)).toEqual(Array(3).fill({ code: '22P02', message: 'invalid input syntax' }));
    expect(written.sort()).toEqual(
      ids(1000)
        .filter((id) => !bad.has(id))
        .sort(),
    );
    // About 2·k·log2(n) statements for k refused of n, not one per entry.
    expect(state.statements).toBeLessThanOrEqual(2 * 3 * Math.ceil(Math.log2(1000)) + 1);
  });

  it('parks every entry of a batch that holds nothing else', async () => {
    const { writer, written, parked, state } = fakes(new Set(ids(7)));
    expect((await writer.write(ids(7).map((id) => entry(id)))).written).toBe(0);
    expect(parked).toHaveLength(7);
    expect(written).toEqual([]);
    // The bound entry-writer.ts states: 2n − 1 inserts (every node of the halving tree).
    expect(state.statements).toBe(2 * 7 - 1);
  });

  it('throws, parking nothing, when the database fails for another reason than the data (retried with backoff)', async () => {
    const { writer, parked, state } = fakes(new Set(['t1']));
    for (const outage of [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      sqlError('57P01', 'terminating connection due to administrator command'),
      sqlError('53100', 'could not extend file: No space left on device'),
      sqlError('08006', 'connection failure'),
      new Error('Connection terminated unexpectedly'),
    ]) {
      state.outage = outage;
      await expect(writer.write(ids(4).map((id) => entry(id)))).rejects.toBe(outage);
    }
    expect(parked).toEqual([]);
  });

  it('throws when parking fails, so that the batch stays queued; the retry writes each entry once', async () => {
    const { writer, written, parked, state } = fakes(new Set(['t2']));
    state.parkingFails = true;
    await expect(writer.write(ids(4).map((id) => entry(id)))).rejects.toThrow('connection terminated');
    expect(parked).toEqual([]);
    state.parkingFails = false;
    await writer.write(ids(4).map((id) => entry(id)));
    expect(written.sort()).toEqual(['t0', 't1', 't3']);
    expect(parked.map((p) => p.trackId)).toEqual(['t2']);
  });

  it('parks before the database the dates it would take but the ledger cannot use, with SQLSTATE 22007', async () => {
    const { writer, written, state } = fakes(new Set());
    const odd = [
      'infinity',
      'epoch',
      '0000-01-01T00:00:00.000Z',
      '+010000-01-01T00:00:00.000Z',
      '2031-02-30T00:00:00.000Z',
      '2031-03-05',
      '',
    ];
    const entries = [
      ...odd.map((createdAt, i) => entry(`c${i}`, { createdAt })),
      entry('done', { completedAt: 'infinity' }),
      entry('fine', { completedAt: '2031-03-05T10:00:01.000Z' }),
    ];
    const result = await writer.write(entries);
    expect(result.parked.map((p) => [p.entry.trackId, p.refusal.code])).toEqual([
      ...odd.map((_, i) => [`c${i}`, '22007']),
      ['done', '22007'],
    ]);
    expect(written).toEqual(['fine']);
    expect(state.statements).toBe(1);
  });

  it('takes only SQLSTATE classes 22, 23 and 54 for the data', () => {
    expect(refusalOf(sqlError('22P05', 'unsupported Unicode escape sequence'))).toEqual({
      code: '22P05',
      message: 'unsupported Unicode escape sequence',
    });
    expect(refusalOf(sqlError('23502'))?.code).toBe('23502');
    // A CHECK names its constraint; the no-partition 23514 names none: the schema's fault, retried.
    expect(refusalOf(Object.assign(sqlError('23514'), { constraint: 'ledger_entries_charged_check' }))?.code).toBe(
      '23514',
    );
    expect(refusalOf(sqlError('23514', 'no partition of relation "ledger_entries" found for row'))).toBeUndefined();
    expect(refusalOf(sqlError('54000'))?.code).toBe('54000');
    for (const other of ['42P01', '40P01', '57014', 'XX000', 'EPIPE', 'ECONNRESET'])
      expect(refusalOf(sqlError(other))).toBeUndefined();
    expect(refusalOf(new Error('no code'))).toBeUndefined();
    expect(refusalOf(null)).toBeUndefined();
  });
});
