/**
 * The undici 8 handler (src/upstream/upstream-http.ts) against raw sockets that misbehave: reset
 * before reading, headers then reset, a 10 MB answer, a non-ASCII X-Track-Id, and what the socket
 * does after.
 */
import { afterEach, expect, it } from '@jest/globals';
import type net from 'node:net';
import { UpstreamHttp } from '../src/upstream/upstream-http.js';
import { rawTcpServer } from './support/raw-tcp-server.js';
import { upstreamFailure } from './support/upstream-failure.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function serve(onConnection: (socket: net.Socket) => void) {
  const server = await rawTcpServer(onConnection);
  closers.push(server.close);
  return server;
}

function transport(url: string, maxResponseBytes = 4096) {
  const http = new UpstreamHttp({ baseUrl: url, timeoutMs: 2000, maxResponseBytes });
  closers.push(() => http.close());
  return http;
}

it('headers then reset: outcome_unknown', async () => {
  const server = await serve((socket) =>
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{"x"');
      setImmediate(() => socket.resetAndDestroy());
    }),
  );
  const error = await upstreamFailure(transport(server.url).post('/x', '{"a":1}', undefined));
  expect(error.kind).toBe('outcome_unknown');
});

it('reset before reading anything: not_sent or outcome_unknown, never not_sent once the bytes arrived', async () => {
  const server = await serve((socket) => socket.resetAndDestroy());
  const error = await upstreamFailure(transport(server.url).post('/x', '{"a":1}', undefined));
  // Whether the request reached the server before the reset is the kernel's race.
  expect(['not_sent', 'outcome_unknown']).toContain(error.kind);
  if (server.bytes() > 0) expect(error.kind).not.toBe('not_sent');
});

it('reset once the request arrived, before any answer: outcome_unknown', async () => {
  const server = await serve((socket) => socket.once('data', () => socket.resetAndDestroy()));
  const error = await upstreamFailure(transport(server.url).post('/x', '{"a":1}', undefined));
  expect(server.bytes()).toBeGreaterThan(0);
  expect(error.kind).toBe('outcome_unknown');
});

it('a 10 MB answer: malformed, too large, connection dropped', async () => {
  const server = await serve((socket) =>
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10485760\r\n\r\n');
      const chunk = Buffer.alloc(65536, 'x');
      let sent = 0;
      const pump = () => {
        while (sent < 10485760 && !socket.destroyed) {
          sent += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', pump);
        }
      };
      pump();
    }),
  );
  const error = await upstreamFailure(transport(server.url).post('/x', '{}', undefined));
  expect(error.kind).toBe('malformed');
  expect(error.details.responseTooLarge).toBe(true);
  await server.untilClosed(1);
  expect(server.closed()).toBe(1);
});

it('X-Track-Id: non-ASCII bytes decoded as before (utf8)', async () => {
  const server = await serve((socket) =>
    socket.once('data', () =>
      socket.write(
        Buffer.concat([
          Buffer.from('HTTP/1.1 200 OK\r\nx-track-id: '),
          Buffer.from('tid-é', 'utf8'),
          Buffer.from('\r\ncontent-length: 2\r\n\r\n{}'),
        ]),
      ),
    ),
  );
  const response = await transport(server.url).post('/x', '{}', undefined);
  expect(response.trackIdHeader).toBe('tid-é');
});
