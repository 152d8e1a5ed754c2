/**
 * The ledger's SQL against a real PostgreSQL server (started here) and against PGlite: the
 * same migrations and statements on both (docs/decisions/0010-ledger-postgresql-client.md).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase, type LedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { queuedEntry } from './support/ledger-entries.js';
import { dropExpiredPartitions, ensurePartitions, migrate, monthStart } from '../src/ledger/ledger-schema.js';
import { Readable } from 'node:stream';
import { LedgerReads } from '../src/ledger/ledger-reads.js';
import { Reconciliations } from '../src/ledger/reconciliation.js';
import { ProblemException } from '../src/problem/problem.js';
import { MIGRATIONS } from '../src/ledger/ledger-migrations.js';
import { ENTRY_FIELDS, LedgerStore } from '../src/ledger/ledger.store.js';
import { usage } from '../src/ledger/ledger-usage.js';
import { trends } from '../src/ledger/ledger-trends.js';
import { InquiryList } from '../src/ledger/inquiry-list.js';
import type { ResolutionListener } from '../src/ledger/resolution-listener.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';
import { capturedNestErrors } from './support/captured-log.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);

const entry = queuedEntry;

let server: PostgresServer;
beforeAll(async () => {
  server = await PostgresServer.start();
});
afterAll(async () => {
  await server?.stop();
});

// The error the failed budget listener provokes on purpose, captured and asserted by its test.
const loggedErrors = capturedNestErrors([]);

describe('migrations', () => {
  it('applies each version once when several replicas start at once (advisory lock)', async () => {
    const dbs = Array.from({ length: 5 }, () => new PgLedgerDatabase(server.url, { max: 1 }));
    try {
      const applied = await Promise.all(dbs.map((db) => migrate(db)));
      const versions = MIGRATIONS.map((m) => m.version);
      expect(applied.flat().sort((a, b) => a - b)).toEqual(versions);
      const rows = await dbs[0].query<{ version: number }>('SELECT version FROM ledger_migrations ORDER BY version');
      expect(rows).toEqual(versions.map((version) => ({ version })));
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });
});

describe.each(ledgerEngines(() => server.url, 'ledger-store'))('the ledger store on %s', (_name, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  beforeAll(async () => {
    db = await open();
    await migrate(db);
    store = new LedgerStore(db, cipher, 90);
  });
  afterAll(() => closeLedger(db));

  it('stores a text with a lone surrogate whole, its surrogate as U+FFFD, as node-postgres sends it (PGlite cut its end)', async () => {
    const rows = await db.query<{ v: string }>('SELECT $1::text AS v', ['é\udfffabc']);
    expect(rows).toEqual([{ v: 'é\ufffdabc' }]);
  });

  it('writes an entry once however often it is inserted, creating its month partition when missing', async () => {
    const first = entry({ createdAt: '2031-03-05T10:00:00.000Z', data: { matched: true } });
    expect(await store.insert([first])).toBe(1);
    expect(await store.insert([first, first])).toBe(0);
    const facts = await store.facts(first.trackId);
    expect(facts?.entries).toHaveLength(1);
    const { data: _data, ...fields } = first;
    expect(facts?.entries[0]).toEqual(fields);
  });

  it('keeps the data sealed in the table and opens it on read', async () => {
    const settled = entry({ data: { firstName: 'Ali' } });
    await store.insert([settled]);
    const [row] = await db.query<{ sealed_data: string }>(
      'SELECT sealed_data FROM ledger_results WHERE track_id = $1',
      [settled.trackId],
    );
    expect(row.sealed_data).toMatch(/^enc:v1:k1:/);
    expect(row.sealed_data).not.toContain('Ali');
    expect((await store.facts(settled.trackId))?.data).toEqual({ firstName: 'Ali' });
  });

  it('answers without the data a result it cannot open (no key ring, a retired key), said once, never a failure', async () => {
    const settled = entry({ data: { firstName: 'Ali' } });
    await store.insert([settled]);
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      const retired = new StoreCipher([{ id: 'k2', key: new Secret(Buffer.alloc(32, 8).toString('base64')) }]);
      for (const reader of [new StoreCipher([]), retired]) {
        const reads = new LedgerStore(db, reader, 90);
        for (let i = 0; i < 2; i += 1) {
          const facts = await reads.facts(settled.trackId);
          expect(facts?.entries.map((e) => e.trackId)).toEqual([settled.trackId]);
          expect(facts).not.toHaveProperty('data');
        }
      }
      // The retired key's reader says it once, naming neither the trackId nor the key id.
      expect(errors.mock.calls.map(([line]) => String(line))).toEqual([
        expect.stringMatching(/ledger result cannot be opened.*without their data/),
      ]);
      expect(String(errors.mock.calls[0][0])).not.toMatch(new RegExp(`${settled.trackId}|k1|k2`));
    } finally {
      errors.mockRestore();
    }
  });

  it('keeps no result in clear: migration 5 deletes those written before, and a read never serves one', async () => {
    const { data: _data, ...plain } = entry({ data: { firstName: 'Ali' } });
    const sealed = entry({ data: { firstName: 'Reza' } });
    await store.insert([plain, sealed]);
    // As a gateway without a key ring wrote it before results were kept only sealed.
    await db.query('INSERT INTO ledger_results (track_id, created_at, sealed_data) VALUES ($1, $2, $3)', [
      plain.trackId,
      plain.createdAt,
      JSON.stringify({ firstName: 'Ali' }),
    ]);
    expect(await store.facts(plain.trackId)).not.toHaveProperty('data');

    await db.query('DELETE FROM ledger_migrations WHERE version = 5');
    expect(await migrate(db)).toEqual([5]);
    const left = await db.query<{ t: string }>(
      'SELECT track_id::text AS t FROM ledger_results WHERE track_id IN ($1, $2)',
      [plain.trackId, sealed.trackId],
    );
    expect(left).toEqual([{ t: sealed.trackId }]);
    expect((await store.facts(sealed.trackId))?.data).toEqual({ firstName: 'Reza' });
  });

  it('keeps a later fact (a reconciliation) beside the first, by kind', async () => {
    const overdue = entry({ kind: 'overdue', status: 'unknown', charged: 'possibly', completedAt: undefined });
    const resolution = {
      ...overdue,
      kind: 'reconciled' as const,
      status: 'succeeded' as const,
      charged: 'yes' as const,
    };
    expect(await store.insert([overdue, resolution, resolution])).toBe(2);
    const facts = await store.facts(overdue.trackId);
    expect(facts?.entries.map((e) => e.kind).sort()).toEqual(['overdue', 'reconciled']);
  });

  it.each([
    ['settled written before overdue (two drainers, XAUTOCLAIM)', true],
    ['overdue written before settled (the usual order)', false],
  ])('reads an inquiry by its strongest fact, whatever the write order: %s', async (_order, settledFirst) => {
    const settled = entry({ createdAt: '2031-03-05T10:00:00.000Z', completedAt: '2031-03-05T10:00:01.000Z' });
    const overdue: QueuedEntry = {
      ...settled,
      kind: 'overdue',
      status: 'unknown',
      charged: 'possibly',
      completedAt: undefined,
      upstreamCode: undefined,
    };
    // Two statements: recorded_at (the transaction's time) orders them as written.
    for (const written of settledFirst ? [settled, overdue] : [overdue, settled]) await store.insert([written]);
    const view = await new LedgerReads(store).inquiry(settled.trackId);
    expect(view).toMatchObject({
      status: 'succeeded',
      completedAt: '2031-03-05T10:00:01.000Z',
      upstream: { code: 200 },
    });
  });

  it('keeps a reused inquiry’s reusedFrom and unitsSaved: read back, exported, counted in usage (docs/api.md §6)', async () => {
    const at = '2033-02-03T10:00:00.000Z';
    const paid = entry({ createdAt: at, costUnits: 3, requestHandlingType: 'advanced' });
    const sameClient = entry({ createdAt: at, charged: 'no', costUnits: 0, reusedFrom: paid.trackId, unitsSaved: 3 });
    const otherClient = { ...sameClient, trackId: randomUUID(), clientId: 'svc-b', unitsSaved: 1 };
    await store.insert([paid, sameClient, otherClient]);

    const { data: _data, ...fields } = sameClient;
    expect((await store.facts(sameClient.trackId))?.entries).toEqual([fields]);
    const reads = new LedgerReads(store);
    expect(await reads.inquiry(sameClient.trackId)).toMatchObject({ status: 'succeeded', reusedFrom: paid.trackId });
    expect(await reads.inquiry(sameClient.trackId)).not.toHaveProperty('reusedFromHidden');
    // Under company sharing, another client's answer: the ledger keeps it, its caller is not shown it.
    expect(await reads.inquiry(otherClient.trackId)).toMatchObject({
      reusedFrom: paid.trackId,
      reusedFromHidden: true,
    });
    expect(await reads.inquiry(paid.trackId)).not.toHaveProperty('reusedFrom');

    expect(ENTRY_FIELDS.slice(-6)).toEqual([
      'reusedFrom',
      'unitsSaved',
      'upstreamMessage',
      'unitPrice',
      'currency',
      'resolvedBy',
    ]);
    const exported = await store.page({ from: new Date(at), to: new Date('2033-02-04T00:00:00Z'), clientId: 'svc-a' });
    expect(exported.map((e) => [e.reusedFrom, e.unitsSaved])).toEqual(
      [paid, sameClient].sort((a, b) => a.trackId.localeCompare(b.trackId)).map((e) => [e.reusedFrom, e.unitsSaved]),
    );
    const rows = await usage(store, new Date('2033-02-01T00:00:00Z'), new Date('2033-03-01T00:00:00Z'), 'month');
    expect(rows.map(({ spent: _spent, saved: _saved, ...row }) => row)).toEqual([
      {
        clientId: 'svc-a',
        period: '2033-02',
        inquiries: 2,
        succeeded: 2,
        failed: 0,
        unknown: 0,
        unitsSpent: 3n,
        reused: 1,
        unitsSaved: 3n,
      },
      {
        clientId: 'svc-b',
        period: '2033-02',
        inquiries: 1,
        succeeded: 1,
        failed: 0,
        unknown: 0,
        unitsSpent: 0n,
        reused: 1,
        unitsSaved: 1n,
      },
    ]);
  });

  it('counts as reused only answers that bought nothing, not stale answers served after a fresh attempt (issue 43)', async () => {
    const at = '2033-04-03T10:00:00.000Z';
    const paid = entry({ createdAt: at, clientId: 'svc-stale', costUnits: 2 });
    const reuse = { createdAt: at, clientId: 'svc-stale', reusedFrom: paid.trackId };
    const reservation = { units: 2, budgets: ['svc-stale'], daily: 'd2033-04-03', monthly: 'm2033-04' };
    // The reuse path: nothing sent under it, costUnits 0, its saving recorded.
    const reused = entry({ ...reuse, charged: 'no', costUnits: 0, unitsSaved: 2 });
    // Fresh attempts under stale-if-error, sent upstream and failed, answered from `paid`: each
    // reserved its units and may have been charged; neither saved anything.
    const failed = entry({ ...reuse, status: 'failed', charged: 'no', costUnits: 2, reservation, upstreamCode: 500 });
    const timedOut = entry({ ...reuse, status: 'unknown', charged: 'possibly', costUnits: 2, reservation });
    await store.insert([paid, reused, failed, timedOut]);
    const [from, to] = [new Date('2033-04-01T00:00:00Z'), new Date('2033-05-01T00:00:00Z')];

    const [row] = await usage(store, from, to, 'month');
    expect(row).toMatchObject({ inquiries: 4, failed: 1, unknown: 1, unitsSpent: 4n, reused: 1, unitsSaved: 2n });
    const { rows } = await trends(store, from, to, 'UTC');
    expect(rows.filter((r) => r.clientId === 'svc-stale').map((r) => r.reused)).toEqual([1]);
    const list = new InquiryList(store);
    const listed = await list.page({ from, to, clientId: 'svc-stale', reused: true }, undefined, 10);
    expect(listed.inquiries.map((e) => e.trackId)).toEqual([reused.trackId]);
    const notReused = await list.page({ from, to, clientId: 'svc-stale', reused: false }, undefined, 10);
    expect(notReused.inquiries.map((e) => e.trackId).sort()).toEqual(
      [paid.trackId, failed.trackId, timedOut.trackId].sort(),
    );
  });

  it('refuses one overlong CSV record with a validation problem, not held whole (64 KiB field)', async () => {
    const reconciliations = new Reconciliations(store, { unsentCharges: { inc: () => undefined } } as never);
    const body = Readable.from([`trackId\n"${'a'.repeat(64 * 1024)}`, '"\n']);
    const refused = await reconciliations.reconcile(body).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ProblemException);
    expect(refused).toMatchObject({ code: 'validation_failed' });
    expect((refused as Error).message).toMatch(/CSV_MAX_RECORD_SIZE/);
  });

  describe('reconciliation', () => {
    type Told = Parameters<ResolutionListener['resolved']>[0];
    const metrics = { unsentCharges: { inc: () => undefined } } as never;
    const csv = (...trackIds: string[]) => Readable.from([`trackId\n${trackIds.join('\n')}\n`]);
    const unknownAt = (createdAt: string) =>
      entry({ kind: 'overdue', status: 'unknown', charged: 'possibly', createdAt, completedAt: undefined });

    it('resolves an unknown absent from the list of a named period as not charged; without a period leaves it', async () => {
      const charged = entry({ createdAt: '2032-05-03T10:00:00.000Z' });
      // A failed fresh attempt served under stale-if-error: its resolution keeps reusedFrom (docs/api.md §2).
      const absent = { ...unknownAt('2032-05-04T10:00:00.000Z'), reusedFrom: charged.trackId, unitsSaved: 1 };
      await store.insert([charged, absent]);
      const told: Told[] = [];
      const reconciliations = new Reconciliations(store, metrics, {
        resolved: (r) => {
          told.push(r);
          return Promise.resolve();
        },
      });

      const unnamed = await reconciliations.reconcile(csv(charged.trackId));
      expect(unnamed).toMatchObject({ unknownsAbsentFromList: 'leftUnresolved', resolvedNotCharged: { count: 0 } });
      expect((await store.facts(absent.trackId))?.entries).toHaveLength(1);
      expect(told).toEqual([]);

      const period = { from: new Date('2032-05-01T00:00:00Z'), to: new Date('2032-06-01T00:00:00Z') };
      const named = await reconciliations.reconcile(csv(charged.trackId), { period });
      expect(named).toMatchObject({
        unknownsAbsentFromList: 'resolvedNotCharged',
        resolvedNotCharged: { count: 1, trackIds: [absent.trackId] },
      });
      expect(
        (await store.facts(absent.trackId))?.entries.map((e) => [
          e.kind,
          e.status,
          e.charged,
          e.reusedFrom,
          e.unitsSaved,
        ]),
      ).toEqual([
        ['overdue', 'unknown', 'possibly', charged.trackId, 1],
        ['reconciled', 'failed', 'no', charged.trackId, 1],
      ]);
      // No reservation recorded with it (no budget applied): no budget move.
      expect(told).toEqual([]);
      const [row] = await usage(store, period.from, period.to, 'month');
      // A fresh attempt (sent, its units reserved) saved nothing: not reused, whatever it was answered with.
      expect(row).toMatchObject({ inquiries: 2, failed: 1, unknown: 0, unitsSpent: 1n, reused: 0, unitsSaved: 0n });
    });

    it('tells the resolutions a failed listener missed when the same file is sent again', async () => {
      const unknown = {
        ...unknownAt('2032-07-04T10:00:00.000Z'),
        reservation: { units: 3, budgets: ['svc-a'], daily: 'd2032-07-04', monthly: 'm2032-07' },
      };
      await store.insert([unknown]);
      const told: Told[] = [];
      let failures = 1;
      const reconciliations = new Reconciliations(store, metrics, {
        resolved: (r) => {
          if (failures-- > 0) return Promise.reject(new Error('Redis down'));
          told.push(r);
          return Promise.resolve();
        },
      });
      // The resolutions are committed; the answer says their budget moves are pending, not "nothing was sent".
      await expect(reconciliations.reconcile(csv(unknown.trackId))).rejects.toMatchObject({
        code: 'store_unavailable',
        detail: expect.stringContaining('pending'),
      });
      expect(loggedErrors.take()).toEqual([expect.stringContaining('its budget moves are pending')]);
      const again = await reconciliations.reconcile(csv(unknown.trackId));
      // Nothing appended the second time, yet the budget is told.
      expect(again.resolved.count).toBe(0);
      expect((await store.facts(unknown.trackId))?.entries).toHaveLength(2);
      // The verdict and the recorded units: the budget store sets what the inquiry counts to them.
      expect(told).toEqual([{ ...unknown.reservation, trackId: unknown.trackId, revision: 1, charged: true }]);
    });
  });

  it('exports in keyset pages, every row once, in order, filtered', async () => {
    const from = new Date('2032-06-01T00:00:00Z');
    const rows = Array.from({ length: 12_345 }, (_, i) =>
      entry({
        createdAt: new Date(from.getTime() + Math.floor(i / 3) * 1000).toISOString(),
        clientId: i % 5 === 0 ? 'svc-b' : 'svc-a',
      }),
    );
    for (let i = 0; i < rows.length; i += 2_000) await store.insert(rows.slice(i, i + 2_000));
    const seen: string[] = [];
    for await (const row of store.entries({ from, to: new Date('2032-07-01T00:00:00Z') })) seen.push(row.trackId);
    expect(seen).toHaveLength(rows.length);
    expect(new Set(seen).size).toBe(rows.length);
    let svcB = 0;
    for await (const row of store.entries({ from, to: new Date('2032-07-01T00:00:00Z'), clientId: 'svc-b' })) {
      expect(row.clientId).toBe('svc-b');
      svcB += 1;
    }
    expect(svcB).toBe(rows.filter((r) => r.clientId === 'svc-b').length);
  });

  it('drops whole partitions past the retentions: results first, entries later', async () => {
    const now = new Date('2040-01-15T00:00:00Z');
    const old = entry({ createdAt: '2039-06-10T00:00:00.000Z', data: { x: 1 } });
    const recent = entry({ createdAt: '2039-12-20T00:00:00.000Z', data: { x: 2 } });
    await ensurePartitions(db, [new Date(old.createdAt), new Date(recent.createdAt), now]);
    await store.insert([old, recent]);
    // The questions asked about each (the tracker's rows) go with the inquiry's entries, not before.
    for (const inquiry of [old, recent]) {
      await db.query('INSERT INTO ledger_tracking (track_id, created_at) VALUES ($1, $2)', [
        inquiry.trackId,
        inquiry.createdAt,
      ]);
    }
    const tracked = async () =>
      (
        await db.query<{ track_id: string }>(
          'SELECT track_id::text FROM ledger_tracking WHERE track_id = ANY($1::uuid[])',
          [[old.trackId, recent.trackId]],
        )
      ).map((row) => row.track_id);
    const dropped = await dropExpiredPartitions(db, now, { entriesDays: 365, resultsDays: 90 });
    expect(await tracked()).toHaveLength(2);
    expect(dropped).toContain('ledger_results_203906');
    expect(dropped).not.toContain('ledger_results_203912');
    expect(dropped).not.toContain('ledger_entries_203906');
    const results = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_results WHERE track_id = $1', [
      old.trackId,
    ]);
    expect(results[0].n).toBe(0);
    const later = await dropExpiredPartitions(db, new Date('2040-08-01T00:00:00Z'), {
      entriesDays: 365,
      resultsDays: 90,
    });
    expect(later).toContain('ledger_entries_203906');
    expect(await store.facts(old.trackId)).toBeNull();
    expect(await tracked()).toEqual([recent.trackId]);
    expect(monthStart(now, -1).toISOString()).toBe('2039-12-01T00:00:00.000Z');
  });
});
