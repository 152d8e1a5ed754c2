/**
 * Refusal counts in the ledger (src/ledger/ledger-refusals.ts, issue 35) on a real PostgreSQL
 * server and on PGlite: two writers adding the same keys at once lose nothing (the additive
 * upsert); fuzzed client ids, and ids configured as they are (API_KEYS, BUDGETS: an array
 * element spelled NULL, one an array literal would quote) come back exactly through the trends,
 * whose rows are ordered by day, client and operation, refusal-only rows among them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { RefusalCount } from '../src/caller-auth/refusal-tally.js';
import { MAX_ID_CLAIM_LENGTH } from '../src/caller-auth/jwt.authenticator.js';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase, type LedgerDatabase } from '../src/ledger/ledger-database.js';
import { addRefusals, dropExpiredRefusals } from '../src/ledger/ledger-refusals.js';
import { trends } from '../src/ledger/ledger-trends.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { queuedEntry } from './support/ledger-entries.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);
const FROM = new Date('2031-05-01T00:00:00Z');
const TO = new Date('2031-06-01T00:00:00Z');

/** Client ids as authentication can give them: `jwt:` and up to 256 usable characters of a claim. */
function fuzzedIds(): string[] {
  const alphabet = [
    'a',
    'Z',
    '"',
    "'",
    '\\',
    '\\\\',
    ',',
    '{',
    '}',
    ' ',
    'ی',
    'é',
    '😀',
    '𝄞',
    '\u200d',
    '%',
    '|',
    '[',
    ']',
  ];
  const ids = new Set([
    `jwt:${'😀'.repeat(MAX_ID_CLAIM_LENGTH / 2)}`,
    `jwt:${'x'.repeat(MAX_ID_CLAIM_LENGTH)}`,
    'jwt:"quoted"',
    'jwt:back\\slash\\',
    'jwt:NULL',
    'jwt:{a,b}',
  ]);
  let seed = 42;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
  while (ids.size < 40) {
    const length = 1 + (next() % 60);
    ids.add(`jwt:${Array.from({ length }, () => alphabet[next() % alphabet.length]).join('')}`);
  }
  return [...ids];
}

/** API_KEYS: [A-Za-z0-9_.-]{1,64}; BUDGETS: printable ASCII without space, up to 256. */
const CONFIGURED_IDS = [
  'NULL',
  'null',
  'Null',
  '.',
  '-',
  '_',
  'a'.repeat(64),
  '!"#$%&\'()*+,/:;<=>?@[\\]^`{|}~',
  '{}',
  '"',
  '\\',
];

let server: PostgresServer;
beforeAll(async () => {
  server = await PostgresServer.start();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(ledgerEngines(() => server.url, 'refusals'))('refusal counts on %s', (_name, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  beforeAll(async () => {
    db = await open();
    store = new LedgerStore(db, cipher, 90);
    await store.ready();
  });
  afterAll(() => closeLedger(db));

  it("retention: drops the counts of days before the entries' retention began, keeps the rest", async () => {
    const count = (day: string, clientId: string) => ({
      day,
      clientId,
      operation: 'shahkar' as const,
      reason: 'budget' as const,
      count: 4,
    });
    await addRefusals(db, [
      count('2020-01-30', 'old-shop'),
      count('2020-01-31', 'edge-shop'),
      count('2020-02-01', 'kept-shop'),
    ]);
    // 2021-01-31 less 366 days is 2020-01-31: days before it go, that day stays.
    expect(await dropExpiredRefusals(db, new Date('2021-01-31T12:00:00Z'), 366)).toBe(1);
    const left = await db.query<{ client_id: string }>(
      `SELECT client_id FROM ledger_refusals WHERE client_id LIKE '%-shop' ORDER BY day`,
    );
    expect(left.map((row) => row.client_id)).toEqual(['edge-shop', 'kept-shop']);
    expect(await dropExpiredRefusals(db, new Date('2021-01-31T12:00:00Z'), 366)).toBe(0);
  });

  it('adds what two writers flush at once, key by key', async () => {
    const clients = Array.from({ length: 30 }, (_, i) => `shop-${i}`);
    const flushOf = (n: number): RefusalCount[] =>
      clients.flatMap((clientId) => [
        { day: '2031-05-02', clientId, operation: 'shahkar' as const, reason: 'budget' as const, count: n },
        { day: '2031-05-02', clientId, operation: 'iban' as const, reason: 'quota' as const, count: 1 },
      ]);
    // Two replicas' writers, five flushes each, all in flight together (each reversed once: any order).
    const second = new PgLedgerDatabase(server.url);
    const writers = db instanceof PgLedgerDatabase ? [db, second] : [db, db];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => {
        const flush = flushOf(i % 2 === 0 ? 2 : 3);
        return addRefusals(writers[i % 2], i % 3 === 0 ? flush.reverse() : flush);
      }),
    );
    await second.close();
    const { rows } = await trends(store, FROM, TO, 'UTC');
    const shops = rows.filter((row) => row.clientId.startsWith('shop-'));
    expect(shops).toHaveLength(60);
    for (const row of shops) {
      expect(row.day).toBe('2031-05-02');
      expect(row.inquiries).toBe(0);
      expect([row.refusedBudget, row.refusedQuota]).toEqual(row.operation === 'shahkar' ? [25, 0] : [0, 10]);
    }
  });

  it('gives back fuzzed client ids exactly, on the day they were tallied', async () => {
    const ids = fuzzedIds();
    await addRefusals(
      db,
      ids.map((clientId, i) => ({ day: '2031-05-09', clientId, operation: 'iban', reason: 'budget', count: i + 1 })),
    );
    const { rows } = await trends(store, new Date('2031-05-09T00:00:00Z'), new Date('2031-05-10T00:00:00Z'), 'UTC');
    const found = new Map(rows.map((row) => [row.clientId, row.refusedBudget]));
    expect(ids.map((id) => found.get(id))).toEqual(ids.map((_, i) => i + 1));
    expect(rows.every((row) => row.day === '2031-05-09' && row.refusedQuota === 0)).toBe(true);
  });

  it('stores client ids as configured exactly (no jwt: prefix)', async () => {
    await addRefusals(
      db,
      CONFIGURED_IDS.map((clientId, i) => ({
        day: '2031-05-12',
        clientId,
        operation: 'iban',
        reason: 'quota',
        count: i + 1,
      })),
    );
    const { rows } = await trends(store, new Date('2031-05-12T00:00:00Z'), new Date('2031-05-13T00:00:00Z'), 'UTC');
    const found = new Map(rows.map((row) => [row.clientId, row.refusedQuota]));
    expect(CONFIGURED_IDS.map((id) => found.get(id))).toEqual(CONFIGURED_IDS.map((_, i) => i + 1));
  });

  it('orders the trends by day, client and operation, refusal-only rows among the inquiries', async () => {
    const at = (day: number) => new Date(Date.UTC(2031, 4, day, 12)).toISOString();
    await store.insert([
      queuedEntry({ clientId: 'order-b', operation: 'shahkar', createdAt: at(20), completedAt: at(20) }),
      queuedEntry({ clientId: 'order-b', operation: 'iban', createdAt: at(21), completedAt: at(21) }),
      queuedEntry({ clientId: 'order-d', operation: 'iban', createdAt: at(20), completedAt: at(20) }),
    ]);
    await addRefusals(db, [
      { day: '2031-05-21', clientId: 'order-a', operation: 'shahkar', reason: 'budget', count: 1 },
      { day: '2031-05-20', clientId: 'order-c', operation: 'iban', reason: 'quota', count: 1 },
      { day: '2031-05-20', clientId: 'order-b', operation: 'iban', reason: 'quota', count: 1 },
      { day: '2031-05-20', clientId: 'order-b', operation: 'shahkar', reason: 'budget', count: 2 },
    ]);
    const { rows } = await trends(store, new Date('2031-05-20T00:00:00Z'), new Date('2031-05-22T00:00:00Z'), 'UTC');
    expect(
      rows
        .filter((row) => row.clientId.startsWith('order-'))
        .map((row) => [row.day, row.clientId, row.operation, row.inquiries, row.refusedBudget + row.refusedQuota]),
    ).toEqual([
      ['2031-05-20', 'order-b', 'iban', 0, 1],
      ['2031-05-20', 'order-b', 'shahkar', 1, 2],
      ['2031-05-20', 'order-c', 'iban', 0, 1],
      ['2031-05-20', 'order-d', 'iban', 1, 0],
      ['2031-05-21', 'order-a', 'shahkar', 0, 1],
      ['2031-05-21', 'order-b', 'iban', 1, 0],
    ]);
  });
});
