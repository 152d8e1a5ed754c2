/**
 * No entry can stop the ledger (src/ledger/entry-writer.ts): whatever an entry holds, the way
 * from the queue (a real redis-server) through the drainer to a real PostgreSQL server and to
 * PGlite writes it or parks it, once, and writes the rest of its batch.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { InquiryPrices } from '../src/accounting/inquiry-prices.js';
import { DEFAULT_INQUIRY_PRICES } from '../src/config/budget-config.js';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase, PgliteLedgerDatabase, type LedgerDatabase } from '../src/ledger/ledger-database.js';
import { LedgerDrainer } from '../src/ledger/ledger-drainer.js';
import { LedgerMetrics } from '../src/ledger/ledger-metrics.js';
import { isInt4, type QueuedEntry } from '../src/ledger/ledger-entry.js';
import { moneyOf } from '../src/ledger/money.js';
import type { InquiryFactsInput } from '../src/ledger/ledger-queue.js';
import { ensurePartitions } from '../src/ledger/ledger-schema.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { storableText } from '../src/ledger/parked-entries.js';
import { RedisLedgerQueue } from '../src/ledger/redis-ledger.queue.js';
import { GatewayMetrics } from '../src/observability/metrics.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { queuedEntry } from './support/ledger-entries.js';
import { PostgresServer } from './support/postgres-server.js';
import { RedisServer } from './support/redis-server.js';
import { capturedNestErrors } from './support/captured-log.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 5).toString('base64')) }]);
const prices = new InquiryPrices({ get: () => DEFAULT_INQUIRY_PRICES } as never);
const config = { get: () => ({ retentionDays: 1826, resultRetentionDays: 90, drain: true }) } as never;

// The errors these tests provoke on purpose, captured (never printed into a green run's log).
capturedNestErrors([/ledger entr(y|ies) refused by the database, parked/]);

let redis: RedisServer;
let postgres: PostgresServer;
const clients: Redis[] = [];
let prefixes = 0;

beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
});
afterAll(async () => {
  clients.forEach((client) => client.disconnect());
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

function record(overrides: Partial<InquiryFactsInput> = {}): InquiryFactsInput {
  const now = Date.now();
  return {
    trackId: randomUUID(),
    clientId: 'jwt:app',
    subjectSha256: 'c'.repeat(64),
    operation: 'shahkar',
    requestHandlingType: 'standard',
    status: 'succeeded',
    createdAt: new Date(now).toISOString(),
    completedAt: new Date(now + 200).toISOString(),
    upstream: { code: 200 },
    charged: 'yes',
    requestId: 'req-p',
    ...overrides,
  };
}

// What PostgreSQL text refuses (NUL, a lone UTF-16 surrogate), what it takes, and in between.
const PIECES = ['a', 'ی', '😀', '\ud800', '\udfff', '\u0000', '\u0007', '\u007f', '"', '\\', '\ufeff', '\u2028'];
const hostileText = fc.oneof(
  { weight: 4, arbitrary: fc.constant('svc-a') },
  {
    weight: 4,
    arbitrary: fc.string({
      unit: fc.oneof(fc.constantFrom(...PIECES), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })),
      maxLength: 8,
    }),
  },
  // 100 kB, with an unstorable character at either end or none.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('', '\u0000', '\ud800'), fc.boolean())
      .map(([odd, first]) => (first ? `${odd}${'x'.repeat(100_000)}` : `${'x'.repeat(100_000)}${odd}`)),
  },
);
const NUMBERS = [1, 0, -0, 7, 3e9, 2.5, NaN, Infinity, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, 1e300];
const INSTANTS = ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z'];
const ODD_DATES = [
  '0000-01-01T00:00:00.000Z',
  '+010000-01-01T00:00:00.000Z',
  'infinity',
  'epoch',
  'not a date',
  '2031-02-30T00:00:00.000Z',
  '2031-03-05',
  '',
];
const date = fc.oneof(
  { weight: 4, arbitrary: fc.constant('now') },
  { weight: 1, arbitrary: fc.constantFrom(...INSTANTS) },
  { weight: 2, arbitrary: fc.constantFrom(...ODD_DATES) },
);
const anyFields = fc.record({
  trackIdTail: fc.constantFrom('', '', '', '', 'x', '\u0000', '\ud800'),
  clientId: hostileText,
  subjectSha256: fc.option(hostileText, { nil: undefined }),
  operation: fc.oneof(fc.constantFrom('shahkar', 'iban'), hostileText),
  requestHandlingType: fc.oneof(fc.constantFrom('standard', 'advanced'), hostileText),
  status: fc.constantFrom('succeeded', 'failed', 'unknown', 'pending', 'odd\u0000'),
  charged: fc.constantFrom('yes', 'no', 'possibly', undefined, 'maybe', '\ud800'),
  // Always given: without it the queue looks the price up by operation, which a hostile one lacks.
  costUnits: fc.constantFrom(...NUMBERS),
  createdAt: date,
  completedAt: fc.option(date, { nil: undefined }),
  code: fc.option(fc.constantFrom(...NUMBERS), { nil: undefined }),
  requestId: fc.option(hostileText, { nil: undefined }),
  data: fc.option(fc.record({ name: hostileText }), { nil: undefined }),
  // What a budget reservation counted, when the queue carries it (src/ledger/ledger-queue.ts).
  reservation: fc.option(
    fc.record({
      units: fc.constantFrom(1, 3, 0, 3e9, 2.5, -(2 ** 31)),
      budgets: fc.array(hostileText, { maxLength: 2 }),
      daily: fc.oneof(fc.constant('d2031-03-05'), hostileText),
      monthly: fc.oneof(fc.constant('m2031-03'), hostileText),
    }),
    { nil: undefined },
  ),
  // A reused inquiry's source (a uuid column) and the units it saved (docs/api.md §6).
  reusedFrom: fc.option(fc.oneof(fc.uuid(), hostileText), { nil: undefined }),
  unitsSaved: fc.option(fc.constantFrom(...NUMBERS), { nil: undefined }),
});

/**
 * The unit price stamped on the record (COST_UNIT_PRICE when it was opened), drawn for every
 * inquiry: well-formed ones (0 to 6 decimals, trailing zeros kept, up to 18 whole digits, odd but
 * valid ISO codes) must read back exactly; any other (`good: false`) is left out, the entry unpriced.
 */
const goodPrice = fc
  .record({
    whole: fc.oneof(fc.constant('0'), fc.bigInt({ min: 1n, max: 10n ** 18n - 1n }).map(String)),
    fraction: fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 6 }),
    currency: fc.constantFrom('IRR', 'EUR', 'XAU', 'XXX', 'ZZZ', 'USN'),
  })
  .map(({ whole, fraction, currency }) => ({
    unitPrice: fraction === '' ? whole : `${whole}.${fraction}`,
    currency,
    good: true,
  }));
/** A price wrong in exactly one way: its amount, its currency, or one of the pair missing. */
const badAmount = fc.oneof(
  fc.constantFrom('007', '1e3', '-1', '0.1234567', '', ' 1', '1.', '.5', '١٢', 'NaN', '1000000000000000000'),
  fc.constantFrom(...NUMBERS),
  hostileText,
);
const badCurrency = fc.oneof(fc.constantFrom('irr', 'EURO', '€', 'IR', '', 'I\u0000R'), hostileText);
const badPrice = fc
  .oneof(
    fc.tuple(goodPrice, badAmount).map(([good, unitPrice]) => ({ unitPrice, currency: good.currency })),
    fc.tuple(goodPrice, badCurrency).map(([good, currency]) => ({ unitPrice: good.unitPrice, currency })),
    goodPrice.map(({ unitPrice }) => ({ unitPrice })),
    goodPrice.map(({ currency }) => ({ currency })),
  )
  .map((price) => ({ ...price, good: false }));
const price = fc.option(fc.oneof({ weight: 3, arbitrary: goodPrice }, { weight: 1, arbitrary: badPrice }), {
  nil: undefined,
});

/** A plain inquiry's fields: each drawn inquiry takes up to three of the odd ones above instead. */
const PLAIN = {
  trackIdTail: '',
  clientId: 'svc-a',
  subjectSha256: undefined,
  operation: 'shahkar',
  requestHandlingType: 'standard',
  status: 'succeeded',
  charged: 'yes',
  costUnits: 1,
  createdAt: 'now',
  completedAt: undefined,
  code: undefined,
  requestId: 'req-p',
  data: undefined,
  reservation: undefined,
  reusedFrom: undefined,
  unitsSaved: undefined,
};
const inquiry = fc
  .tuple(anyFields, fc.subarray(Object.keys(PLAIN) as Array<keyof typeof PLAIN>, { maxLength: 3 }), price)
  .map(
    ([odd, kept, stamped]) =>
      ({ ...PLAIN, ...Object.fromEntries(kept.map((field) => [field, odd[field]])), price: stamped }) as typeof odd & {
        price?: { unitPrice?: unknown; currency?: unknown; good: boolean };
      },
  );

/** The queue's own entry builder (protected), so that the oracle judges what is really queued. */
interface Builds {
  entryOf(record: InquiryFactsInput): QueuedEntry;
}

/** The record the queue settles, from the drawn fields ('now' is now). */
function drawn(fields: typeof inquiry extends fc.Arbitrary<infer T> ? T : never): InquiryFactsInput {
  const at = (value: string) => (value === 'now' ? new Date().toISOString() : value);
  return {
    trackId: `${randomUUID()}${fields.trackIdTail}`,
    clientId: fields.clientId,
    subjectSha256: fields.subjectSha256,
    operation: fields.operation,
    requestHandlingType: fields.requestHandlingType as InquiryFactsInput['requestHandlingType'],
    status: fields.status,
    createdAt: at(fields.createdAt),
    ...(fields.completedAt !== undefined ? { completedAt: at(fields.completedAt) } : {}),
    ...(fields.code !== undefined ? { upstream: { code: fields.code } } : {}),
    ...(fields.charged !== undefined ? { charged: fields.charged as InquiryFactsInput['charged'] } : {}),
    costUnits: fields.costUnits,
    ...(fields.requestId !== undefined ? { requestId: fields.requestId } : {}),
    ...(fields.data !== undefined ? { data: fields.data } : {}),
    ...(fields.reservation !== undefined ? { reservation: fields.reservation } : {}),
    ...(fields.reusedFrom !== undefined ? { reusedFrom: fields.reusedFrom } : {}),
    ...(fields.unitsSaved !== undefined ? { unitsSaved: fields.unitsSaved } : {}),
    ...(fields.price !== undefined
      ? ({ unitPrice: fields.price.unitPrice, currency: fields.price.currency } as InquiryFactsInput)
      : {}),
  };
}

/** Text PostgreSQL stores: no NUL, no lone UTF-16 surrogate. */
const storableString = (value: string | undefined) =>
  // eslint-disable-next-line no-control-regex
  value === undefined || !/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(value);
const instant = (value: string | undefined) =>
  value !== undefined && /^\d{4}-/.test(value) && !value.startsWith('0000') && new Date(value).toISOString() === value;

/**
 * The oracle, over the entry the queue builds from a record (every field LedgerEntry has, nested
 * ones included, the upstream data aside): a row of ledger_entries when its trackId is a UUID,
 * every string storable, every number a 32-bit integer, `charged` one of the three, its dates
 * instants of years 0001 to 9999.
 */
function storable(entry: QueuedEntry): boolean {
  const { data: _data, trackId, charged, createdAt, completedAt, reusedFrom, ...rest } = entry;
  const leaves: unknown[] = [];
  const walk = (value: unknown): void => {
    if (value !== null && typeof value === 'object') Object.values(value).forEach(walk);
    else leaves.push(value);
  };
  walk(rest);
  return (
    /^[0-9a-f-]{36}$/.test(trackId) &&
    (reusedFrom === undefined || /^[0-9a-f-]{36}$/.test(reusedFrom)) &&
    leaves.every((leaf) =>
      typeof leaf === 'number' ? isInt4(leaf) : typeof leaf !== 'string' || storableString(leaf),
    ) &&
    ['yes', 'no', 'possibly'].includes(charged) &&
    instant(createdAt) &&
    (completedAt === undefined || instant(completedAt))
  );
}

describe.each([
  ['a PostgreSQL server', () => Promise.resolve(new PgLedgerDatabase(postgres.url) as LedgerDatabase)],
  ['PGlite', () => PgliteLedgerDatabase.open() as Promise<LedgerDatabase>],
])('the drainer on %s', (engine, open) => {
  let db: LedgerDatabase;
  beforeAll(async () => {
    db = await open();
  });
  afterAll(async () => {
    await db.close();
  });

  /** A replica's queue (Redis), store, drainer and metrics on a key prefix of its own. */
  function replica() {
    const client = new Redis(redis.url);
    clients.push(client);
    const queue = new RedisLedgerQueue(client, new RedisKeys(`p${prefixes++}`), cipher, prices);
    const store = new LedgerStore(db, cipher, 90);
    const metrics = new LedgerMetrics(new GatewayMetrics());
    return { queue, store, metrics, drainer: new LedgerDrainer(config, db, queue, store, metrics) };
  }

  /**
   * A text column as this engine's client reads it back. PGlite (0.5) drops a leading U+FEFF
   * when it decodes a text value (its TextDecoder takes it for a byte-order mark); the row holds
   * it (length() counts it) and a PostgreSQL server returns it.
   */
  const readBack = (text: string) => (engine === 'PGlite' ? text.replace(/^\ufeff/, '') : text);

  async function writtenKinds(trackIds: string[]): Promise<string[]> {
    const rows = await db.query<{ track_id: string }>(
      'SELECT track_id::text FROM ledger_entries WHERE track_id::text = ANY($1::text[])',
      [trackIds],
    );
    return rows.map((row) => row.track_id);
  }

  it('writes the rest of a batch holding an entry the database refuses (a JWT azp with a lone surrogate), and parks that one', async () => {
    const { queue, drainer, metrics } = replica();
    const hostile = record({ clientId: 'jwt:app\ud800' });
    const inquiries = [...Array.from({ length: 12 }, () => record()), hostile];
    for (const inquiry of inquiries) await queue.settled(inquiry);

    expect(await drainer.drainOnce()).toBe(13);

    expect((await queue.backlog(Date.now())).depth).toBe(0);
    const written = await writtenKinds(inquiries.map((r) => r.trackId));
    expect(written.sort()).toEqual(
      inquiries
        .slice(0, 12)
        .map((r) => r.trackId)
        .sort(),
    );
    const parked = await db.query<{ track_id: string; error_code: string; entry: Uint8Array }>(
      'SELECT track_id, error_code, entry FROM ledger_parked WHERE track_id = $1',
      [hostile.trackId],
    );
    expect(parked).toHaveLength(1);
    expect(parked[0].error_code).toMatch(/^22/);
    // The entry as it was, the lone surrogate kept (escaped in its JSON).
    expect(JSON.parse(Buffer.from(parked[0].entry).toString('utf8'))).toMatchObject({ clientId: 'jwt:app\ud800' });
    expect((await metrics.entriesParked.get()).values[0]?.value).toBe(1);
    expect((await metrics.entriesWritten.get()).values.find((v) => v.labels.kind === 'settled')?.value).toBe(12);
  });

  it('keeps a batch queued, parking nothing, while its month has no partition (detached); writes it once the partition is back', async () => {
    const { queue, drainer, store } = replica();
    await store.ready();
    // A month no other case uses: its partition made, then detached (an operator's mistake).
    const at = '2035-05-10T00:00:00.000Z';
    await ensurePartitions(db, [new Date(at)]);
    await db.query('ALTER TABLE ledger_entries DETACH PARTITION ledger_entries_203505');
    const inquiries = Array.from({ length: 3 }, () => record({ createdAt: at, completedAt: at }));
    for (const inquiry of inquiries) await queue.settled(inquiry);
    const trackIds = inquiries.map((r) => r.trackId);

    // Twice: the second read is the unacknowledged batch again, still not the data's fault.
    for (let i = 0; i < 2; i++) await expect(drainer.drainOnce()).rejects.toMatchObject({ code: '23514' });
    expect((await queue.backlog(Date.now())).depth).toBe(3);
    expect(await db.query('SELECT 1 FROM ledger_parked WHERE track_id = ANY($1::text[])', [trackIds])).toEqual([]);

    await db.query(
      "ALTER TABLE ledger_entries ATTACH PARTITION ledger_entries_203505 FOR VALUES FROM ('2035-05-01T00:00:00Z') TO ('2035-06-01T00:00:00Z')",
    );
    expect(await drainer.drainOnce()).toBe(3);
    expect((await writtenKinds(trackIds)).sort()).toEqual([...trackIds].sort());
    expect((await queue.backlog(Date.now())).depth).toBe(0);
  });

  it('costs one statement for an entry a CHECK refuses (it names its constraint): no partition work, no retry', async () => {
    const statements: string[] = [];
    const counting = Object.assign(Object.create(db) as LedgerDatabase, {
      query: <R>(sql: string, params?: unknown[]) => {
        statements.push(sql);
        return db.query<R>(sql, params);
      },
    });
    const store = new LedgerStore(counting, cipher, 90);
    await store.ready();
    const refused = { ...queuedEntry(), charged: 'maybe' } as unknown as QueuedEntry;
    await ensurePartitions(db, [new Date(refused.createdAt)]);
    statements.length = 0;
    await expect(store.insert([refused])).rejects.toMatchObject({ code: '23514', constraint: expect.any(String) });
    expect(statements).toHaveLength(1);
  });

  it('writes or parks every entry exactly once whatever its fields hold, parking only what the database cannot store', async () => {
    const { queue, drainer } = replica();
    let parkedSeen = 0;
    let writtenSeen = 0;
    const pricesSeen = { read: 0, dropped: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(inquiry, { minLength: 1, maxLength: 6 }), async (drawnFields) => {
        const records = drawnFields.map(drawn);
        for (const r of records) await queue.settled(r);
        while ((await drainer.drainOnce()) > 0);
        expect((await queue.backlog(Date.now())).depth).toBe(0);
        const written = await db.query<{
          track_id: string;
          n: number;
          client_id: string;
          reused_from: string | null;
          units_saved: number | null;
          unit_price: string | null;
          currency: string | null;
          money: string | null;
        }>(
          `SELECT track_id::text, count(*)::int AS n, min(client_id) AS client_id, min(reused_from::text) AS reused_from,
             min(units_saved) AS units_saved, min(unit_price::text) AS unit_price, min(currency) AS currency,
             min(cost_units * unit_price)::text AS money FROM ledger_entries
           WHERE track_id::text = ANY($1::text[]) GROUP BY 1`,
          [records.map((r) => r.trackId).filter((id) => /^[0-9a-f-]{36}$/.test(id))],
        );
        const parked = await db.query<{ track_id: string; n: number; error: string }>(
          `SELECT track_id, count(*)::int AS n, min(error_code || ' ' || error_message) AS error FROM ledger_parked
           WHERE track_id = ANY($1::text[]) GROUP BY 1`,
          [records.map((r) => storableText(r.trackId))],
        );
        // The entry each record becomes, as the queue builds it (what the oracle judges).
        const built = new Map(records.map((r) => [r.trackId, (queue as unknown as Builds).entryOf(r)]));
        for (const r of records) {
          const fits = storable(built.get(r.trackId)!);
          const row = written.find((w) => w.track_id === r.trackId);
          const park = parked.find((p) => p.track_id === storableText(r.trackId));
          // Exactly once, in one table or the other, and in the one the oracle names.
          expect({ trackId: r.trackId, written: row?.n ?? 0, parked: park?.n ?? 0, error: park?.error }).toEqual({
            trackId: r.trackId,
            written: fits ? 1 : 0,
            parked: fits ? 0 : 1,
            error: fits ? undefined : expect.any(String),
          });
          if (row) expect(row.client_id).toBe(readBack(r.clientId));
          if (row) {
            const entry = built.get(r.trackId)!;
            // -0 is stored as 0 (a drawn unitsSaved may be -0).
            const saved = entry.unitsSaved === undefined ? null : entry.unitsSaved + 0;
            expect([row.reused_from, row.units_saved]).toEqual([entry.reusedFrom ?? null, saved]);
            // The price stamped reads back exactly as written when well-formed; any other is not stored.
            const stamped = drawnFields[records.indexOf(r)].price;
            const good = stamped?.good === true;
            expect([row.unit_price, row.currency]).toEqual(good ? [stamped.unitPrice, stamped.currency] : [null, null]);
            // The engine's exact numeric product agrees with the gateway's BigInt money (money.ts).
            if (good)
              expect(row.money).toBe(
                moneyOf(entry.costUnits, { amount: String(stamped.unitPrice), currency: 'X' }).amount,
              );
            if (good) pricesSeen.read += 1;
            else if (stamped !== undefined) pricesSeen.dropped += 1;
          }
        }
        parkedSeen += parked.length;
        writtenSeen += written.length;
      }),
      // A fixed seed: CI runs the same 30 cases every time (FC_SEED explores others locally);
      // first, a storable client_id that starts with U+FEFF (the engines' divergence above).
      {
        numRuns: 30,
        seed: Number(process.env.FC_SEED ?? -1163195203),
        examples: [
          [[{ ...PLAIN, clientId: '\ufeffsvc-a' } as Parameters<typeof drawn>[0]]],
          // The largest price at the largest scale, times the largest units a column holds.
          [
            [
              {
                ...PLAIN,
                costUnits: 2 ** 31 - 1,
                price: { unitPrice: '999999999999999999.000001', currency: 'XAU', good: true },
              } as Parameters<typeof drawn>[0],
            ],
          ],
        ],
      },
    );
    // The runs drew both kinds, so neither half of the property held vacuously.
    expect(parkedSeen).toBeGreaterThan(0);
    expect(writtenSeen).toBeGreaterThan(0);
    expect(pricesSeen.read).toBeGreaterThan(0);
    expect(pricesSeen.dropped).toBeGreaterThan(0);
  });
});

describe('the drainer on a PostgreSQL server that drops its connection in the middle of a bisect', () => {
  let db: PgLedgerDatabase;
  beforeAll(async () => {
    db = new PgLedgerDatabase(postgres.url);
    await new LedgerStore(db, cipher, 90).ready();
    // The server ends the statement's own connection (57P01) when it inserts this client's row.
    await db.query(`CREATE FUNCTION cut_connection() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$`);
    await db.query(`CREATE TRIGGER cut_connection BEFORE INSERT ON ledger_entries FOR EACH ROW
      WHEN (NEW.client_id = 'svc-cut') EXECUTE FUNCTION cut_connection()`);
  });
  afterAll(async () => {
    await db.query('DROP TRIGGER IF EXISTS cut_connection ON ledger_entries');
    await db.close();
  });

  it('parks nothing and acknowledges nothing; the batch is written and parked whole once the database is back', async () => {
    const client = new Redis(redis.url);
    clients.push(client);
    const queue = new RedisLedgerQueue(client, new RedisKeys(`p${prefixes++}`), cipher, prices);
    const store = new LedgerStore(db, cipher, 90);
    const drainer = new LedgerDrainer(config, db, queue, store, new LedgerMetrics(new GatewayMetrics()));
    // The whole batch is refused for `bad`; its first half then loses the connection at `cut`.
    const [g1, cut, g2, bad] = [record(), record({ clientId: 'svc-cut' }), record(), record({ clientId: 'a\ud800' })];
    for (const inquiry of [g1, cut, g2, bad]) await queue.settled(inquiry);
    const trackIds = [g1, cut, g2, bad].map((r) => r.trackId);
    const rows = async (table: string) =>
      (
        await db.query<{ track_id: string }>(
          `SELECT track_id::text FROM ${table} WHERE track_id::text = ANY($1::text[])`,
          [trackIds],
        )
      ).map((row) => row.track_id);

    await expect(drainer.drainOnce()).rejects.toMatchObject({ code: '57P01' });
    expect((await queue.backlog(Date.now())).depth).toBe(4);
    expect([await rows('ledger_entries'), await rows('ledger_parked')]).toEqual([[], []]);

    await db.query('DROP TRIGGER cut_connection ON ledger_entries');
    expect(await drainer.drainOnce()).toBe(4);
    expect((await rows('ledger_entries')).sort()).toEqual([g1, cut, g2].map((r) => r.trackId).sort());
    expect(await rows('ledger_parked')).toEqual([bad.trackId]);
    expect((await queue.backlog(Date.now())).depth).toBe(0);
  });
});
