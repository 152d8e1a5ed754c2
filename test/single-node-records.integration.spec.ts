/**
 * The single-node records (REDIS_URL unset: src/inquiry/sql-inquiry.store.ts,
 * src/reuse/sql-answer.store.ts) on both engines the SQL runs on: PGlite in its worker, as the
 * gateway runs it, and a real PostgreSQL server. Every write over a row is conditional, as the
 * Redis scripts are: concurrent claims of one key, exactly one wins; one leader per question; an
 * expired row is absent and swept; what reaches storage comes back exactly (fuzzed).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { Secret } from '../src/config/secret.js';
import type { IdempotencyClaim, InquiryRecord } from '../src/inquiry/inquiry-record.js';
import { SqlIdempotencyStore, SqlInquiryStore } from '../src/inquiry/sql-inquiry.store.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import type { ReuseLookup } from '../src/reuse/answer-store.js';
import { SqlAnswerStore } from '../src/reuse/sql-answer.store.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { ExpiredRowSweeper, SWEEP_BATCH, type RecordsDatabase } from '../src/store/sql-records.js';
import { StoreUnavailableError } from '../src/store/store-unavailable.error.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';

let postgres: PostgresServer;
beforeAll(async () => {
  postgres = await PostgresServer.start();
}, 60_000);
afterAll(() => postgres?.stop());

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);
const ALLOW = { maxAgeMs: 60_000, staleMs: 0, join: true, lead: true };

function record(overrides: Partial<InquiryRecord> = {}): InquiryRecord {
  return {
    trackId: randomUUID(),
    clientId: 'svc-a',
    operation: 'shahkar',
    requestHandlingType: 'standard',
    fingerprint: 'f'.repeat(64),
    status: 'pending',
    createdAt: new Date().toISOString(),
    ...overrides,
  };
}

const claimOf = (trackId: string): IdempotencyClaim => ({
  trackId,
  fingerprint: 'fp',
  state: 'in_flight',
  claimedAt: 1,
});

// What PostgreSQL text refuses (NUL, lone surrogates) and what it takes, inside the values stored.
const PIECES = ['a', 'ی', '😀', '\ud800', '\udfff', '\u0000', '\u0007', '"', '\\', '\ufeff', '\u2028', "'"];
const hostile = fc.string({
  unit: fc.oneof(fc.constantFrom(...PIECES), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })),
  maxLength: 12,
});

describe.each(ledgerEngines(() => postgres.url, 'single-node-records'))('%s', (_engine, open) => {
  let db: LedgerDatabase;
  let records: RecordsDatabase;
  let clock = Date.now();
  const now = () => clock;

  beforeAll(async () => {
    db = await open();
    const migrated = migrate(db);
    records = { db, ready: () => migrated };
    await migrated;
  }, 60_000);
  afterAll(() => closeLedger(db));

  it('concurrent claims of one key: exactly one wins, every other is told the winner', async () => {
    const store = new SqlIdempotencyStore(records, cipher, now);
    const ids = Array.from({ length: 16 }, () => randomUUID());
    const answers = await Promise.all(ids.map((id) => store.claim('svc-a', 'k'.repeat(64), claimOf(id), 60)));
    const winners = ids.filter((_, i) => answers[i] === null);
    expect(winners).toHaveLength(1);
    expect(new Set(answers.filter(Boolean).map((claim) => claim!.trackId))).toEqual(new Set(winners));
    // Another scope holds its own key of the same name.
    expect(await store.claim('svc-b', 'k'.repeat(64), claimOf(randomUUID()), 60)).toBeNull();
  });

  it('completes and releases only the in-flight claim of its trackId; an expired claim is claimed afresh', async () => {
    const store = new SqlIdempotencyStore(records, cipher, now);
    const [first, other] = [randomUUID(), randomUUID()];
    expect(await store.claim('svc-a', 'e1', claimOf(first), 10)).toBeNull();
    expect(await store.complete('svc-a', 'e1', { ...claimOf(other), state: 'done' })).toBe(false);
    await store.release('svc-a', 'e1', other); // not its claim: left
    const response = { status: 200, contentType: 'application/json', trackId: first, body: { ok: '\u0000\ud800' } };
    expect(await store.complete('svc-a', 'e1', { ...claimOf(first), state: 'done', response })).toBe(true);
    expect(await store.complete('svc-a', 'e1', { ...claimOf(first), state: 'done' })).toBe(false); // the first stored stays
    expect(await store.claim('svc-a', 'e1', claimOf(other), 10)).toEqual({
      ...claimOf(first),
      state: 'done',
      response,
    });
    clock += 10_001;
    expect(await store.claim('svc-a', 'e1', claimOf(other), 10)).toBeNull();
    await store.release('svc-a', 'e1', other);
    expect(await store.claim('svc-a', 'e1', claimOf(first), 10)).toBeNull();
  });

  it('records: create only where none lives, settle keeps the expiry, a conclusion only over the value it read', async () => {
    const store = new SqlInquiryStore(records, cipher, now);
    const pending = record();
    await store.create(pending, 5);
    // Refused as Redis refuses it (SET NX inside storeCall): StoreUnavailableError, the collision its cause.
    const collision = await store.create(pending, 5).catch((error: unknown) => error);
    expect(collision).toBeInstanceOf(StoreUnavailableError);
    expect((collision as Error).cause).toEqual(new Error('trackId collision'));
    const settled: InquiryRecord = { ...pending, status: 'succeeded', completedAt: new Date().toISOString() };
    await store.settle(settled);
    expect(await store.concludeUnknown(pending.trackId, 'x')).toEqual(settled); // settled: kept
    clock += 5_001;
    expect(await store.get(pending.trackId)).toBeNull(); // settle kept the first expiry
    await store.settle(settled); // gone, no ttl: not written again
    expect(await store.get(pending.trackId)).toBeNull();
    await store.settle(settled, 60); // gone, with a ttl: written again
    expect(await store.get(pending.trackId)).toEqual(settled);
    await store.create(pending, 60).catch(() => undefined);

    const raced = record();
    await store.create(raced, 60);
    const concluding = await Promise.all([
      store.concludeUnknown(raced.trackId, 'c'),
      store.settle({ ...raced, status: 'failed', completedAt: 's' }),
    ]);
    const final = await store.get(raced.trackId);
    expect(['unknown', 'failed']).toContain(final!.status);
    // A settlement that landed first is kept, never concluded over (a later one replaces, as SET XX).
    if (concluding[0]!.status === 'failed') expect(final!.status).toBe('failed');
    await store.discard(raced.trackId);
    expect(await store.get(raced.trackId)).toBeNull();
  });

  it('reuse: one leader among concurrent lookups, the others join; storing ends the lead and hits after', async () => {
    const store = new SqlAnswerStore(records, cipher, now);
    const question = `q-${randomUUID()}`;
    const leaders = Array.from({ length: 12 }, () => ({ trackId: randomUUID(), deadlineMs: clock + 30_000 }));
    const looks = await Promise.all(leaders.map((leader) => store.lookupOrJoin(question, 'standard', ALLOW, leader)));
    const leading = looks.filter((look) => look.result === 'miss' && look.leading);
    expect(leading).toHaveLength(1);
    const lead = leaders[looks.findIndex((look) => look.result === 'miss' && look.leading)];
    for (const look of looks.filter((l) => l.result !== 'miss')) {
      expect(look).toMatchObject({ result: 'join', leader: { trackId: lead.trackId } });
    }
    expect(await store.leaseLeft(question, 'standard', lead.trackId)).toBeGreaterThan(0);
    expect(await store.renew(question, 'standard', randomUUID(), clock + 30_000)).toBe(false);
    const data = { name: 'ی\u0000\ud800' };
    await store.store(question, 'standard', { trackId: lead.trackId, clientId: 'svc-a', data }, 60);
    expect(await store.leaseLeft(question, 'standard', lead.trackId)).toBe(0);
    clock += 1_000;
    const hit = await store.lookupOrJoin(question, 'standard', ALLOW, leaders[0]);
    expect(hit).toMatchObject({ result: 'hit', ageMs: 1_000, answer: { trackId: lead.trackId, data } });
    clock += 60_000;
    expect(await store.lookupOrJoin(question, 'standard', { ...ALLOW, lead: false }, leaders[0])).toEqual({
      result: 'miss',
      leading: false,
      storedTooOld: false,
    });
  });

  it('sweeps expired rows only', async () => {
    const store = new SqlInquiryStore(records, cipher, now);
    const [old, live] = [record(), record()];
    await store.create(old, 1);
    await store.create(live, 3_600);
    clock += 2_000;
    expect(await new ExpiredRowSweeper(records, now).sweep()).toBeGreaterThanOrEqual(1);
    const left = await db.query<{ track_id: string }>('SELECT track_id FROM vgw_records WHERE track_id = ANY($1)', [
      [old.trackId, live.trackId],
    ]);
    expect(left.map((row) => row.track_id)).toEqual([live.trackId]);
  });

  it('20 concurrent claims of one key: exactly one wins, the other 19 are told its claim', async () => {
    const store = new SqlIdempotencyStore(records, cipher, now);
    const key = `twenty-${randomUUID()}`;
    const ids = Array.from({ length: 20 }, () => randomUUID());
    const answers = await Promise.all(ids.map((id) => store.claim('svc-a', key, claimOf(id), 60)));
    const winners = ids.filter((_, i) => answers[i] === null);
    expect(winners).toHaveLength(1);
    for (const answer of answers.filter((a) => a !== null)) expect(answer).toEqual(claimOf(winners[0]));
    expect(await store.peek('svc-a', key)).toEqual(claimOf(winners[0]));
  });

  it('concurrent claims over an expired claim: exactly one wins, none is told the expired one', async () => {
    const store = new SqlIdempotencyStore(records, cipher, now);
    const key = `expired-${randomUUID()}`;
    const stale = randomUUID();
    expect(await store.claim('svc-a', key, { ...claimOf(stale), state: 'done' }, 1)).toBeNull();
    clock += 1_000; // expires_at == now: expired (reads take a row as live only while expires_at > now)
    expect(await store.peek('svc-a', key)).toBeNull();
    const ids = Array.from({ length: 20 }, () => randomUUID());
    const answers = await Promise.all(ids.map((id) => store.claim('svc-a', key, claimOf(id), 60)));
    const winners = ids.filter((_, i) => answers[i] === null);
    expect(winners).toHaveLength(1);
    for (const answer of answers.filter((a) => a !== null)) expect(answer).toEqual(claimOf(winners[0]));
    // The winner's claim is the live one: it completes, the expired trackId's does not.
    expect(await store.complete('svc-a', key, { ...claimOf(stale), state: 'done' })).toBe(false);
    expect(await store.complete('svc-a', key, { ...claimOf(winners[0]), state: 'done' })).toBe(true);
  });

  it('ExpiredRowSweeper.sweep() deletes only expired rows, of records and of Idempotency-Keys, at the boundary too', async () => {
    const inquiries = new SqlInquiryStore(records, cipher, now);
    const claims = new SqlIdempotencyStore(records, cipher, now);
    const sweeper = new ExpiredRowSweeper(records, now);
    await sweeper.sweep(); // what earlier tests left expired: gone, so the count below is ours alone
    const [gone, edge, live] = [record(), record(), record()];
    const tag = randomUUID();
    await inquiries.create(gone, 1);
    await claims.claim('svc-a', `gone-${tag}`, claimOf(gone.trackId), 1);
    clock += 1_000;
    await inquiries.create(edge, 1); // expires at exactly the sweep's now
    await claims.claim('svc-a', `edge-${tag}`, claimOf(edge.trackId), 1);
    await inquiries.create(live, 2);
    await claims.claim('svc-a', `live-${tag}`, claimOf(live.trackId), 2);
    clock += 1_000;
    expect(await sweeper.sweep()).toBe(4);
    const left = await db.query<{ track_id: string }>(
      'SELECT track_id FROM vgw_records WHERE track_id = ANY($1) UNION ALL SELECT track_id FROM vgw_idempotency WHERE track_id = ANY($1)',
      [[gone.trackId, edge.trackId, live.trackId]],
    );
    expect(left.map((row) => row.track_id)).toEqual([live.trackId, live.trackId]);
    expect(await inquiries.get(live.trackId)).toEqual(live);
    expect(await claims.peek('svc-a', `live-${tag}`)).toEqual(claimOf(live.trackId));
    expect(await sweeper.sweep()).toBe(0);
  });

  it('a value that does not open (its key left the ring) is StoreUnavailableError, as in Redis: 503, never a 500', async () => {
    const retired = new StoreCipher([{ id: 'k2', key: new Secret(Buffer.alloc(32, 9).toString('base64')) }]);
    const kept = record();
    await new SqlInquiryStore(records, cipher, now).create(kept, 60);
    const key = `ring-${randomUUID()}`;
    await new SqlIdempotencyStore(records, cipher, now).claim('svc-a', key, claimOf(kept.trackId), 60);
    const inquiries = new SqlInquiryStore(records, retired, now);
    const claims = new SqlIdempotencyStore(records, retired, now);
    await expect(inquiries.get(kept.trackId)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(inquiries.concludeUnknown(kept.trackId, 'x')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(claims.claim('svc-a', key, claimOf(randomUUID()), 60)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(claims.peek('svc-a', key)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it.each([
    ['in clear', new StoreCipher([])],
    ['sealed', cipher],
  ])(
    'the same claim made again (%s) is answered with itself, as SET NX GET: null only when it was not there',
    async (_, sealing) => {
      const store = new SqlIdempotencyStore(records, sealing, now);
      const [key, made] = [`again-${randomUUID()}`, claimOf(randomUUID())];
      expect(await store.claim('svc-a', key, made, 60)).toBeNull();
      expect(await store.claim('svc-a', key, made, 60)).toEqual(made);
      clock += 60_000;
      expect(await store.claim('svc-a', key, made, 60)).toBeNull(); // expired: made afresh
    },
  );

  it('a claim taken over after its expiry is the new owner’s: the former one neither releases nor completes it', async () => {
    const store = new SqlIdempotencyStore(records, cipher, now);
    const key = `takeover-${randomUUID()}`;
    const [former, owner] = [randomUUID(), randomUUID()];
    expect(await store.claim('svc-a', key, claimOf(former), 2)).toBeNull();
    clock += 2_000; // at expires_at itself: absent (a row lives while expires_at > now; Redis keeps a key 1 ms longer, now > when)
    expect(await store.peek('svc-a', key)).toBeNull();
    expect(await store.complete('svc-a', key, { ...claimOf(former), state: 'done' })).toBe(false);
    expect(await store.claim('svc-a', key, claimOf(owner), 60)).toBeNull();
    await store.release('svc-a', key, former);
    expect(await store.complete('svc-a', key, { ...claimOf(former), state: 'done' })).toBe(false);
    expect(await store.peek('svc-a', key)).toEqual(claimOf(owner));
  });

  it('a record at its expiry is absent to get, conclude and a settle without ttl; create writes over it', async () => {
    const store = new SqlInquiryStore(records, cipher, now);
    const pending = record();
    await store.create(pending, 3);
    clock += 3_000;
    expect(await store.get(pending.trackId)).toBeNull();
    expect(await store.concludeUnknown(pending.trackId, 'x')).toBeNull();
    await store.settle({ ...pending, status: 'failed' });
    expect(await store.get(pending.trackId)).toBeNull();
    await store.create(pending, 3); // SET NX over an expired key
    expect(await store.get(pending.trackId)).toEqual(pending);
  });

  it('a TTL below a second is clamped to one, a fraction rounded up; NaN and Infinity are refused and write nothing', async () => {
    const claims = new SqlIdempotencyStore(records, cipher, now);
    const inquiries = new SqlInquiryStore(records, cipher, now);
    const expiresIn = async (table: string, column: string, id: string) => {
      const [row] = await db.query<{ ms: string }>(
        `SELECT (expires_at - $2)::text AS ms FROM ${table} WHERE ${column} = $1`,
        [id, clock],
      );
      return row ? Number(row.ms) : null;
    };
    for (const [ttl, ms] of [
      [0, 1_000],
      [-5, 1_000],
      [-Infinity, 1_000],
      [0.4, 1_000],
      [1.5, 2_000],
    ]) {
      const created = record();
      await inquiries.create(created, ttl);
      expect(await expiresIn('vgw_records', 'track_id', created.trackId)).toBe(ms);
      const settled = record();
      await inquiries.settle(settled, ttl); // a record gone, written again only for a TTL above 0
      expect(await expiresIn('vgw_records', 'track_id', settled.trackId)).toBe(ttl > 0 ? ms : null);
      const trackId = randomUUID();
      await claims.claim('svc-a', trackId, claimOf(trackId), ttl);
      const [row] = await db.query<{ ms: string }>(
        'SELECT (expires_at - $2)::text AS ms FROM vgw_idempotency WHERE track_id = $1',
        [trackId, clock],
      );
      expect(Number(row.ms)).toBe(ms);
    }
    for (const ttl of [NaN, Infinity]) {
      const refused = record();
      await expect(inquiries.create(refused, ttl)).rejects.toThrow();
      // A settle's TTL is only for a record gone: NaN is not above 0, so nothing is written (as in Redis).
      const settling = inquiries.settle(refused, ttl);
      await (Number.isNaN(ttl) ? expect(settling).resolves.toBeUndefined() : expect(settling).rejects.toThrow());
      await expect(claims.claim('svc-a', refused.trackId, claimOf(refused.trackId), ttl)).rejects.toThrow();
      expect(await inquiries.get(refused.trackId)).toBeNull();
      expect(await claims.peek('svc-a', refused.trackId)).toBeNull();
    }
  });

  it('50 concurrent claims over an expired claim while sweeps run: exactly one wins, its claim stays', async () => {
    const store = new SqlIdempotencyStore(records, cipher, now);
    const sweeper = new ExpiredRowSweeper(records, now);
    const key = `swept-${randomUUID()}`;
    await store.claim('svc-a', key, claimOf(randomUUID()), 1);
    clock += 1_000;
    const ids = Array.from({ length: 50 }, () => randomUUID());
    // Sweeps started before, amid and after the claims (PGlite runs their statements in between).
    const sweeps = [new ExpiredRowSweeper(records, now).sweep()];
    const claiming = ids.map((id, i) => {
      if (i === 25) sweeps.push(new ExpiredRowSweeper(records, now).sweep());
      return store.claim('svc-a', key, claimOf(id), 60);
    });
    const [answers] = await Promise.all([Promise.all(claiming), sweeper.sweep(), ...sweeps]);
    const winners = ids.filter((_, i) => answers[i] === null);
    expect(winners).toHaveLength(1);
    expect(await sweeper.sweep()).toBe(0);
    expect(await store.peek('svc-a', key)).toEqual(claimOf(winners[0]));
  });

  it('a sweep goes on past a full batch', async () => {
    const sweeper = new ExpiredRowSweeper(records, now);
    await sweeper.sweep();
    await db.query(
      `INSERT INTO vgw_idempotency (key_sha256, track_id, state, value, expires_at)
       SELECT 'batch-' || n, 't', 'done', 'v', $1 FROM generate_series(1, $2::int) n`,
      [clock, SWEEP_BATCH + 1],
    );
    expect(await sweeper.sweep()).toBe(SWEEP_BATCH + 1);
  });

  it('reuses the space of swept rows: the table does not grow with rows that are gone', async () => {
    const sweeper = new ExpiredRowSweeper(records, now);
    const bytes = async () =>
      Number((await db.query<{ n: string }>(`SELECT pg_relation_size('vgw_idempotency')::text AS n`))[0].n);
    // 20 000 rows of ~250 bytes, expired at once: far more than what the other tests leave.
    const fill = (round: number) =>
      db.query(
        `INSERT INTO vgw_idempotency (key_sha256, track_id, state, value, expires_at)
         SELECT 'space-' || $2::int || '-' || n, 't', 'done', repeat('v', 200), $1 FROM generate_series(1, 20000) n`,
        [clock, round],
      );
    await sweeper.sweep();
    await fill(1);
    const first = await bytes();
    await sweeper.sweep();
    await fill(2);
    // Without the sweep's VACUUM (PGlite has no autovacuum) the second 20 000 went after the first: 2×.
    expect(await bytes()).toBeLessThan(first * 1.5);
    expect(await sweeper.sweep()).toBe(20_000);
  });

  it('reuse: the newest answer replaces the kept one with its own expiry; a lookup racing a store is one or the other', async () => {
    const store = new SqlAnswerStore(records, cipher, now);
    const question = `q-${randomUUID()}`;
    const lead = { trackId: randomUUID(), deadlineMs: clock + 30_000 };
    await store.store(question, 'standard', { trackId: 'old', clientId: 'svc-a', data: 1 }, 60);
    await store.store(question, 'standard', { trackId: 'new', clientId: 'svc-a', data: 2 }, 2);
    clock += 1_000;
    expect(await store.lookupOrJoin(question, 'standard', ALLOW, lead)).toMatchObject({
      result: 'hit',
      answer: { trackId: 'new', data: 2 },
    });
    clock += 1_000; // the newest answer's own expiry, not the first one's
    expect(await store.lookupOrJoin(question, 'standard', { ...ALLOW, join: false }, lead)).toEqual({
      result: 'miss',
      leading: true,
      storedTooOld: false,
    });
    const [waiter, , late] = await Promise.all([
      store.lookupOrJoin(question, 'standard', ALLOW, { trackId: randomUUID(), deadlineMs: clock + 30_000 }),
      store.store(question, 'standard', { trackId: lead.trackId, clientId: 'svc-a', data: 3 }, 60),
      store.lookupOrJoin(question, 'standard', ALLOW, { trackId: randomUUID(), deadlineMs: clock + 30_000 }),
    ]);
    // Before the store, its leader joined; after it, its answer: never a second leader (a second call upstream).
    const whose = (look: ReuseLookup) =>
      look.result === 'join' ? look.leader.trackId : look.result === 'hit' ? look.answer.trackId : look.result;
    expect([whose(waiter), whose(late)]).toEqual([lead.trackId, lead.trackId]);
    expect(await store.leaseLeft(question, 'standard', lead.trackId)).toBe(0);
  });

  it('keeps whatever the values hold, exactly (fuzzed)', async () => {
    const inquiries = new SqlInquiryStore(records, cipher, now);
    const plain = new SqlIdempotencyStore(records, new StoreCipher([]), now);
    await fc.assert(
      fc.asyncProperty(hostile, hostile, fc.jsonValue(), async (clientId, message, data) => {
        const stored = record({ clientId, upstream: { code: 1, message }, data, status: 'succeeded' });
        await inquiries.create(stored, 60);
        expect(await inquiries.get(stored.trackId)).toEqual(JSON.parse(JSON.stringify(stored)));
        const claim = { ...claimOf(stored.trackId), fingerprint: message };
        // The key holds the fuzzed text and this run's trackId: fast-check repeats values ("" twice),
        // and a key claimed by an earlier run would rightly answer that run's claim.
        const key = `${message}${stored.trackId}`;
        expect(await plain.claim(clientId, key, claim, 60)).toBeNull();
        expect(await plain.claim(clientId, key, claimOf(randomUUID()), 60)).toEqual(claim);
      }),
      { numRuns: 60 },
    );
  });
});
