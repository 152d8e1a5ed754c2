/**
 * The tracker at shutdown (src/http/shutdown-sequence.ts): its stop() waits for the round under
 * way within a bound, so a ledger that stopped answering mid-round does not hold back the steps
 * after it (the ledger queue's flush, closing Redis). Real PostgreSQL behind a proxy that can
 * hold its answers.
 */
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { ResolutionMoves } from '../src/ledger/resolution-moves.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { Tracker, TRACKER_STOP_MS } from '../src/tracking/tracker.js';
import { TrackingBook } from '../src/tracking/tracking-book.js';
import { PostgresServer } from './support/postgres-server.js';
import { rawTcpServer } from './support/raw-tcp-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);
const metrics = { questions: { inc: () => undefined }, unknownsOlderThanADay: { set: () => undefined } } as never;

let postgres: PostgresServer;
let proxy: Awaited<ReturnType<typeof rawTcpServer>>;
let db: PgLedgerDatabase;
/** The client sockets, and whether PostgreSQL's answers are passed on to them. */
const clients: net.Socket[] = [];
const held = { answers: false };

beforeAll(async () => {
  postgres = await PostgresServer.start();
  const port = Number(new URL(postgres.url).port);
  proxy = await rawTcpServer((client) => {
    const server = net.connect(port, '127.0.0.1');
    server.on('error', () => client.destroy());
    client.on('close', () => server.destroy());
    clients.push(client);
    client.pipe(server);
    server.on('data', (chunk: Buffer) => {
      if (!held.answers) client.write(chunk);
    });
  });
  db = new PgLedgerDatabase(postgres.url.replace(`:${port}/`, `:${new URL(proxy.url).port}/`), { max: 1 });
  await migrate(db);
});

afterAll(async () => {
  await proxy?.close();
  await db?.close().catch(() => undefined);
  await postgres?.stop();
});

it('stop() ends within its bound while the round waits on a ledger that stopped answering', async () => {
  const store = new LedgerStore(db, cipher, 90);
  await store.ready();
  const tracker = new Tracker(undefined, new TrackingBook(store), new ResolutionMoves(store), metrics);
  held.answers = true;
  // The round's first query reaches PostgreSQL; its answer never comes back.
  const asked = once(clients[0], 'data');
  tracker.onApplicationBootstrap();
  await asked;
  const started = Date.now();
  await tracker.stop();
  expect(Date.now() - started).toBeLessThan(TRACKER_STOP_MS + 1_000);
  held.answers = false;
}, 30_000);
