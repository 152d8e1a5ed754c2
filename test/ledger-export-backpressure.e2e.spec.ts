/**
 * The export respects backpressure (docs/api.md §6, issue 33): Readable.from piped by Fastify
 * pulls the next row only when the socket drains, so a reader that stops holds the gateway a few
 * pages ahead (what the socket buffers take), not the whole export. Rows the server fetched from
 * the database are counted through LedgerStore.page.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LedgerStore, PAGE_ROWS } from '../src/ledger/ledger.store.js';
import { apiKeysWith, startGateway, type RunningGateway } from './support/gateway.js';
import { queuedEntry } from './support/ledger-entries.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const FINANCE = { clientId: 'finance', key: 'key-finance-export-0123456789', scopes: ['ledger:read'] };
const PAGES = 10;

let sim: UpstreamSimulator;
let gateway: RunningGateway;
let fetched = 0;

beforeAll(async () => {
  sim = new UpstreamSimulator();
  await sim.start(0);
  gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, API_KEYS: apiKeysWith(FINANCE) });
  const store = gateway.app.get(LedgerStore);
  const rows = Array.from({ length: PAGES * PAGE_ROWS }, (_, i) =>
    queuedEntry({ createdAt: new Date(Date.UTC(2041, 0, 1) + i * 1000).toISOString() }),
  );
  for (let i = 0; i < rows.length; i += 10_000) await store.insert(rows.slice(i, i + 10_000));
  // Counts what the export has taken from the database (instrumentation, not a stand-in).
  const page = store.page.bind(store);
  store.page = async (...args) => {
    const found = await page(...args);
    fetched += found.length;
    return found;
  };
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await sim?.stop();
});

describe('GET /admin/ledger with a reader that stops', () => {
  it('stops fetching pages while nothing is read, a few pages ahead at most, and resumes when read', async () => {
    const { port } = new URL(gateway.url);
    const socket = connect({ port: Number(port), host: '127.0.0.1' });
    socket.pause();
    socket.write(
      `GET /admin/ledger?from=2041-01-01&to=2042-01-01 HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${FINANCE.key}\r\nConnection: close\r\n\r\n`,
    );
    /**
     * Resolves once the export has fetched and `fetched` has then not moved for 500 ms: the
     * producer is waiting on the socket. (Before its first page, on a loaded machine, 500 ms
     * without a fetch says nothing.)
     */
    const stalled = async (): Promise<number> => {
      let last = -1;
      while (fetched !== last || fetched === 0) {
        last = fetched;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      return last;
    };
    try {
      const held = await stalled();
      // Ahead by what the socket buffers hold (the kernel's, on loopback up to a few MiB, and
      // Node's 16 KiB) plus the page being sent: measured 3 pages of 10.
      expect(held).toBeGreaterThan(0);
      expect(held).toBeLessThanOrEqual(4 * PAGE_ROWS);
      let bytes = 0;
      while (fetched === held) {
        const chunk = socket.read() as Buffer | null;
        if (chunk) bytes += chunk.length;
        else await new Promise((resolve) => socket.once('readable', resolve));
      }
      expect(fetched).toBeGreaterThan(held);
      // Measured: 4.8 MB read (the kernel's buffers) before the fourth page was fetched.
      expect(bytes).toBeGreaterThan(0);
    } finally {
      socket.destroy();
    }
  }, 60_000);
});
