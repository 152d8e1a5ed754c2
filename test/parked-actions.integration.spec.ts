/**
 * Parked entries re-driven or discarded by operators (src/ledger/parked-actions.ts) on a real
 * PostgreSQL server and on PGlite: each decision an appended fact (who, why), the first one
 * final, the same one replayed, two at once: one wins and the other is 409.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Secret } from '../src/config/secret.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { ParkedActions, reasonOf, type ParkedActor } from '../src/ledger/parked-actions.js';
import { ParkedEntries } from '../src/ledger/parked-entries.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { queuedEntry } from './support/ledger-entries.js';
import { PostgresServer } from './support/postgres-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);
const FINANCE: ParkedActor = { clientId: 'finance', reason: 'the client id was fixed upstream', requestId: 'req-a' };
const AUDIT: ParkedActor = { clientId: 'audit', reason: 'a test entry, not a real inquiry', requestId: 'req-b' };

let postgres: PostgresServer;
beforeAll(async () => {
  postgres = await PostgresServer.start();
});
afterAll(async () => {
  await postgres?.stop();
});

/** The id GET /admin/ledger/parked shows: the SHA-256 of the entry's JSON as parked. */
const idOf = (entry: QueuedEntry) => createHash('sha256').update(JSON.stringify(entry)).digest('hex');

describe.each(ledgerEngines(() => postgres.url, 'parked-actions'))('parked entries on %s', (_engine, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  let actions: ParkedActions;
  beforeAll(async () => {
    db = await open();
    store = new LedgerStore(db, cipher, 90);
    actions = new ParkedActions(store);
  });
  afterAll(async () => {
    await closeLedger(db);
  });

  /** Parks `entry` as the drainer would have, for a refusal the data need not deserve (the operator's case). */
  async function parked(entry: QueuedEntry): Promise<string> {
    await new ParkedEntries(store).park(entry, { code: '23514', message: 'refused by a constraint since dropped' });
    return idOf(entry);
  }
  const entriesOf = async (trackId: string) =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries WHERE track_id = $1', [trackId]))[0]
      .n;

  it('re-drives a parked entry into the ledger once, with who and why; the same request replays; another decision is 409', async () => {
    const entry = queuedEntry();
    const id = await parked(entry);

    const fact = await actions.act(id, 'redriven', FINANCE);
    expect(fact).toMatchObject({
      id,
      action: 'redriven',
      by: 'finance',
      reason: FINANCE.reason,
      written: true,
      replayed: false,
    });
    expect(await entriesOf(entry.trackId)).toBe(1);

    expect(await actions.act(id, 'redriven', { ...FINANCE, requestId: 'req-retry' })).toEqual({
      ...fact,
      replayed: true,
    });
    await expect(actions.act(id, 'discarded', AUDIT)).rejects.toMatchObject({
      code: 'parked_entry_handled',
      message: expect.stringContaining('re-driven into the ledger by finance'),
    });
    // Another reason from the same key is another decision: refused, not replayed.
    await expect(actions.act(id, 'redriven', { ...FINANCE, reason: 'again' })).rejects.toMatchObject({
      code: 'parked_entry_handled',
    });
    expect(await entriesOf(entry.trackId)).toBe(1);

    const listed = await new ParkedEntries(store).list(new Date(Date.now() - 60_000), new Date(Date.now() + 60_000));
    expect(listed.parked.find((row) => row.id === id)?.handled).toEqual({
      action: 'redriven',
      by: 'finance',
      reason: FINANCE.reason,
      at: fact.at,
      written: true,
    });
  });

  it('lets one of two operators acting at once win; the other is 409 and leaves nothing behind', async () => {
    const entry = queuedEntry();
    const id = await parked(entry);

    const outcomes = await Promise.allSettled([
      actions.act(id, 'redriven', FINANCE),
      actions.act(id, 'discarded', AUDIT),
    ]);
    const won = outcomes.filter((o) => o.status === 'fulfilled');
    const lost = outcomes.filter((o) => o.status === 'rejected');
    expect([won.length, lost.length]).toEqual([1, 1]);
    expect(lost[0].reason).toMatchObject({ code: 'parked_entry_handled' });
    const winner = (won[0] as PromiseFulfilledResult<{ action: string }>).value.action;
    // The ledger holds the entry exactly when the re-drive won.
    expect(await entriesOf(entry.trackId)).toBe(winner === 'redriven' ? 1 : 0);
    const facts = await db.query<{ action: string }>(
      'SELECT action FROM ledger_parked_actions WHERE entry_sha256 = $1',
      [id],
    );
    expect(facts).toEqual([{ action: winner }]);
  });

  /**
   * Actions whose transaction starts only once `gate` resolves (after their check for an earlier
   * decision): the moment two operators' checks both found the entry undecided, made certain.
   */
  function heldActions(gate: Promise<unknown>, reached: () => void): ParkedActions {
    const held = new Proxy(db, {
      get(target, name) {
        if (name === 'transaction')
          return async (work: Parameters<LedgerDatabase['transaction']>[0]) => {
            reached();
            await gate;
            return target.transaction(work);
          };
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    return new ParkedActions(new LedgerStore(held, cipher, 90));
  }

  it.each([
    ['the discard', 'discarded', 'redriven'],
    ['the re-drive', 'redriven', 'discarded'],
  ] as const)(
    'a re-drive and a discard both past the check at once: %s, landing first, wins; the other is 409; the entry is in the ledger at most once',
    async (_first, first, second) => {
      const entry = queuedEntry();
      const id = await parked(entry);
      let reached!: () => void;
      const atGate = new Promise<void>((resolve) => (reached = resolve));
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const actorOf = (action: string) => (action === 'redriven' ? FINANCE : AUDIT);

      const late = heldActions(gate, reached).act(id, second, actorOf(second));
      late.catch(() => undefined);
      await atGate; // the late one found no decision and waits to open its transaction
      const fact = await actions.act(id, first, actorOf(first));
      expect(fact).toMatchObject({ action: first, replayed: false });
      open();
      await expect(late).rejects.toMatchObject({ code: 'parked_entry_handled', status: 409 });

      expect(await entriesOf(entry.trackId)).toBe(first === 'redriven' ? 1 : 0);
      const facts = await db.query<{ action: string }>(
        'SELECT action FROM ledger_parked_actions WHERE entry_sha256 = $1',
        [id],
      );
      expect(facts).toEqual([{ action: first }]);
    },
  );

  it('many entries, each re-driven and discarded at the same moment: one decision each, entries written once', async () => {
    const entries = Array.from({ length: 8 }, () => queuedEntry());
    const ids = await Promise.all(entries.map((entry) => parked(entry)));
    const outcomes = await Promise.all(
      ids.map((id) =>
        Promise.allSettled([
          actions.act(id, 'redriven', FINANCE),
          actions.act(id, 'discarded', AUDIT),
          actions.act(id, 'redriven', FINANCE), // the same decision again: replayed when it won
        ]),
      ),
    );
    for (const [i, settled] of outcomes.entries()) {
      const [redrive, discard, again] = settled;
      expect([redrive.status, discard.status].sort()).toEqual(['fulfilled', 'rejected']);
      const lost = (redrive.status === 'rejected' ? redrive : discard) as PromiseRejectedResult;
      expect(lost.reason).toMatchObject({ code: 'parked_entry_handled' });
      const redriven = redrive.status === 'fulfilled';
      expect(again.status).toBe(redriven ? 'fulfilled' : 'rejected');
      expect(await entriesOf(entries[i].trackId)).toBe(redriven ? 1 : 0);
    }
  });

  it('answers 422 when the database refuses the entry again, records nothing, and then takes a discard', async () => {
    const entry = queuedEntry({ clientId: 'jwt:app\ud800' });
    const id = await parked(entry);

    await expect(actions.act(id, 'redriven', FINANCE)).rejects.toMatchObject({ code: 'parked_entry_refused' });
    expect(await db.query('SELECT 1 FROM ledger_parked_actions WHERE entry_sha256 = $1', [id])).toEqual([]);
    expect(await entriesOf(entry.trackId)).toBe(0);

    expect(await actions.act(id, 'discarded', AUDIT)).toMatchObject({
      action: 'discarded',
      by: 'audit',
      replayed: false,
    });
    expect(await entriesOf(entry.trackId)).toBe(0);
    // Decided: a re-drive is told so (409), not that the database refuses the entry (422).
    await expect(actions.act(id, 'redriven', FINANCE)).rejects.toMatchObject({ code: 'parked_entry_handled' });
    await expect(actions.act('0'.repeat(64), 'discarded', AUDIT)).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('the reason an operator gives', () => {
  it('is required, trimmed, at most 500 characters, without control characters, alone in the body', () => {
    expect(reasonOf({ reason: '  fixed upstream ' })).toBe('fixed upstream');
    expect(reasonOf({ reason: 'ی'.repeat(500) })).toHaveLength(500);
    for (const body of [
      null,
      [],
      'why',
      {},
      { reason: '   ' },
      { reason: 7 },
      { reason: 'a\u0000b' },
      { reason: 'x'.repeat(501) },
      { reason: 'ok', by: 'me' },
    ])
      expect(() => reasonOf(body)).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });
});
