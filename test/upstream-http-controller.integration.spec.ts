/**
 * The upstream call's dispatch handler holds undici's controller: what a held controller may
 * still do once its call is over, the deadline racing the answer, and 1xx answers. Raw node:net
 * servers, so every byte and connection is counted.
 */
import { afterEach, expect, it } from '@jest/globals';
import type net from 'node:net';
import type { Dispatcher } from 'undici';
import { UpstreamError } from '../src/upstream/upstream-error.js';
import { UpstreamHttp, type UpstreamHttpResponse } from '../src/upstream/upstream-http.js';
import { rawTcpServer } from './support/raw-tcp-server.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A raw HTTP/1.1 server: `answer(socket, n)` runs once the n-th whole request (small body) arrived. */
async function rawServer(answer: (socket: net.Socket, n: number) => void) {
  let requests = 0;
  const server = await rawTcpServer((socket) => {
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      for (;;) {
        const end = received.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(received.slice(0, end))?.[1] ?? 0);
        if (received.length - end - 4 < length) return;
        received = received.slice(end + 4 + length);
        answer(socket, ++requests);
      }
    });
  });
  closers.push(server.close);
  return { ...server, requests: () => requests };
}

const ok = (body = '{"ok":true}') =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** The transport, and every dispatch handler (the Exchange) it hands undici, in order. */
function transport(url: string, settings: { timeoutMs?: number; connections?: number } = {}) {
  const http = new UpstreamHttp({ baseUrl: url, timeoutMs: 2000, maxResponseBytes: 4096, ...settings });
  closers.push(() => http.close());
  const handlers: Array<Dispatcher.DispatchHandler & { expire(): void }> = [];
  const pool = (http as unknown as { pool: Dispatcher }).pool;
  const dispatch = pool.dispatch.bind(pool);
  pool.dispatch = (options, handler) => {
    handlers.push(handler as (typeof handlers)[number]);
    return dispatch(options, handler);
  };
  return { http, handlers };
}

async function outcome(promise: Promise<UpstreamHttpResponse>): Promise<string> {
  try {
    const response = await promise;
    return `answered ${response.status} ${response.body}`;
  } catch (error) {
    expect(error).toBeInstanceOf(UpstreamError);
    const e = error as UpstreamError;
    return `${e.kind}${e.details.timedOut ? ' timedOut' : ''}`;
  }
}

it("a finished call's controller (its deadline firing late, or abort called on it) leaves the next call on the same connection alone", async () => {
  const server = await rawServer((socket, n) => {
    if (n === 1) socket.write(ok('{"n":1}'));
    else setTimeout(() => socket.write(ok('{"n":2}')), 300);
  });
  const { http, handlers } = transport(server.url, { connections: 1 });

  expect(await outcome(http.post('/x', '{}', undefined))).toBe('answered 200 {"n":1}');
  const second = outcome(http.post('/y', '{}', undefined));
  await new Promise((resolve) => setTimeout(resolve, 100)); // the second is written, on the same socket
  expect(server.requests()).toBe(2);

  const stale = handlers[0] as unknown as { expire(): void; controller?: Dispatcher.DispatchController };
  stale.expire();
  stale.controller?.abort(new Error('stale abort'));

  expect(await second).toBe('answered 200 {"n":2}');
  expect(server.connections()).toBe(1);
  expect(await outcome(http.post('/z', '{}', undefined))).toBe('answered 200 {"n":2}');
  expect(server.connections()).toBe(1);
});

it('the deadline racing the answer: each call either answered or outcome_unknown (timed out), never twice, never not_sent; the pool still works', async () => {
  const DEADLINE = 40;
  const CALLS = 36;
  const server = await rawServer((socket, n) => {
    // The warm-up's calls at once; then answers around the deadline: 0 … 80 ms after the request
    // arrived, 10 ms apart (wide enough that a loaded machine still sees some of each).
    if (n <= CALLS) socket.write(ok(`{"n":${n}}`));
    else setTimeout(() => socket.write(ok(`{"n":${n}}`)), (n % 9) * 10);
  });
  const { http } = transport(server.url, { connections: CALLS });
  // One kept-alive connection per call first, so that no racing call waits in the queue.
  await Promise.all(Array.from({ length: CALLS }, () => http.post('/warm', '{}', undefined)));
  const results = await Promise.all(
    Array.from({ length: CALLS }, async () => {
      const seen: string[] = [];
      const call = http.post('/x', '{}', undefined, undefined, DEADLINE);
      call.then(
        () => seen.push('resolved'),
        () => seen.push('rejected'),
      );
      const result = await outcome(call);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(seen).toHaveLength(1);
      return result;
    }),
  );
  for (const result of results) expect(result).toMatch(/^(answered 200 \{"n":\d+\}|outcome_unknown timedOut)$/);
  // Not a vacuous race: some of each (the answer times straddle the deadline).
  expect(results.some((r) => r.startsWith('answered'))).toBe(true);
  expect(results.some((r) => r.startsWith('outcome_unknown'))).toBe(true);
  // The pool still answers (a new connection where a timed-out one was dropped).
  expect(await outcome(http.post('/x', '{}', undefined))).toMatch(/^answered 200/);
});

it('103 Early Hints before the answer: the final 200 is the answer', async () => {
  const server = await rawServer((socket) =>
    socket.write(`HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\n${ok('{"final":true}')}`),
  );
  const { http } = transport(server.url);
  expect(await outcome(http.post('/x', '{}', undefined))).toBe('answered 200 {"final":true}');
});

it('an unsolicited 100 Continue (undici drops the socket): outcome_unknown, not timed out', async () => {
  const server = await rawServer((socket) => socket.write(`HTTP/1.1 100 Continue\r\n\r\n${ok()}`));
  const { http } = transport(server.url);
  expect(await outcome(http.post('/x', '{}', undefined))).toBe('outcome_unknown');
});
