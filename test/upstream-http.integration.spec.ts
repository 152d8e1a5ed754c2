/**
 * The upstream transport (src/upstream/upstream-http.ts) against real sockets: what each
 * way a call can fail is classified as (never sent / outcome unknown / malformed), the
 * response size bound, the per-call deadline (also while queued for a connection), and
 * keep-alive reuse. The servers are plain node:net / node:http, so each failure is exact.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { UpstreamHttp, type UpstreamHttpSettings } from '../src/upstream/upstream-http.js';
import { freePort } from './support/redis-server.js';
import { upstreamFailure } from './support/upstream-failure.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function listen(server: net.Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  closers.push(async () => {
    for (const socket of sockets) socket.destroy();
    server.close();
    await once(server, 'close');
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

function client(baseUrl: string, settings: Partial<UpstreamHttpSettings> = {}): UpstreamHttp {
  const transport = new UpstreamHttp({ baseUrl, timeoutMs: 2000, maxResponseBytes: 4096, ...settings });
  closers.push(() => transport.close());
  return transport;
}

/** A raw TCP server: `onRequest` runs once a whole request (headers and the small body) has arrived. */
async function rawServer(onRequest: (socket: net.Socket) => void): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = net.createServer((socket) => {
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(received)?.[1] ?? 0);
      if (received.length - end - 4 < length) return;
      received = '';
      requests++;
      onRequest(socket);
    });
    socket.on('error', () => undefined);
  });
  return { url: await listen(server), requests: () => requests };
}

describe('UpstreamHttp', () => {
  it('answers with status, X-Track-Id and body, over kept-alive connections', async () => {
    let connections = 0;
    const server = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        response.writeHead(201, { 'content-type': 'application/json', 'x-track-id': 'tid-1' });
        response.end(JSON.stringify({ path: request.url, auth: request.headers.authorization, body }));
      });
    });
    server.on('connection', () => connections++);
    const url = await listen(server);
    const transport = client(`${url}/prefix/`);

    const first = await transport.post('/api/v5/x', '{"a":1}', 'tok');
    const second = await transport.post('/api/v5/y', '{"b":2}', undefined);
    for (let i = 0; i < 8; i++) await transport.post('/api/v5/z', '{}', undefined);

    expect(first.status).toBe(201);
    expect(first.trackIdHeader).toBe('tid-1');
    expect(JSON.parse(first.body)).toEqual({ path: '/prefix/api/v5/x', auth: 'Bearer tok', body: '{"a":1}' });
    expect(JSON.parse(second.body)).toEqual({ path: '/prefix/api/v5/y', body: '{"b":2}' });
    // Ten calls one after another: the pool opens a second connection at most (undici may
    // still count the first one busy when the second call starts), then reuses them.
    expect(connections).toBeLessThanOrEqual(2);
  });

  it('connection refused → not_sent', async () => {
    const port = await freePort();
    const error = await upstreamFailure(client(`http://127.0.0.1:${port}`).post('/x', '{}', undefined));
    expect(error.kind).toBe('not_sent');
  });

  it('connection closed after the request was received, without an answer → outcome_unknown', async () => {
    const { url, requests } = await rawServer((socket) => socket.destroy());
    const error = await upstreamFailure(client(url).post('/x', '{"a":1}', undefined));
    expect(requests()).toBe(1);
    expect(error.kind).toBe('outcome_unknown');
    expect(error.details.timedOut).toBe(false);
  });

  it('no answer within the deadline after sending → outcome_unknown, timed out', async () => {
    const { url, requests } = await rawServer(() => undefined);
    const started = Date.now();
    const error = await upstreamFailure(client(url, { timeoutMs: 1000 }).post('/x', '{}', undefined));
    expect(requests()).toBe(1);
    expect(error.kind).toBe('outcome_unknown');
    expect(error.details.timedOut).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a body that stalls half-way counts against the same deadline → outcome_unknown, timed out', async () => {
    const { url } = await rawServer((socket) =>
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"meta":'),
    );
    const error = await upstreamFailure(client(url, { timeoutMs: 1000 }).post('/x', '{}', undefined));
    expect(error.kind).toBe('outcome_unknown');
    expect(error.details.timedOut).toBe(true);
  });

  it('a call that expires while queued for a connection is never sent → not_sent, timed out', async () => {
    const { url, requests } = await rawServer(() => undefined); // holds the only connection
    // 1 s: the first call is connected and written well within it, even on a loaded machine.
    const transport = client(url, { timeoutMs: 1000, connections: 1 });
    const first = upstreamFailure(transport.post('/x', '{}', undefined));
    const second = upstreamFailure(transport.post('/y', '{}', undefined));
    // The first is written at once and expires unanswered; the second was still queued behind it.
    expect((await first).kind).toBe('outcome_unknown');
    const queued = await second;
    expect(queued.kind).toBe('not_sent');
    expect(queued.details.timedOut).toBe(true);
    expect(requests()).toBe(1);
  });

  it.each([
    ['with Content-Length', true],
    ['chunked', false],
  ])('an answer larger than the bound (%s) is not read → malformed, response too large', async (_, withLength) => {
    const big = `{"meta":{"isSuccess":true,"code":0},"data":"${'x'.repeat(10_000)}"}`;
    const server = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, withLength ? { 'content-length': Buffer.byteLength(big) } : {});
        if (withLength) response.end(big);
        else {
          response.write(big.slice(0, 3000));
          response.write(big.slice(3000));
          response.end();
        }
      });
    });
    const url = await listen(server);
    const error = await upstreamFailure(client(url, { maxResponseBytes: 4096 }).post('/x', '{}', undefined));
    expect(error.kind).toBe('malformed');
    expect(error.details.responseTooLarge).toBe(true);
  });

  it('an answer that is not HTTP → malformed', async () => {
    const { url } = await rawServer((socket) => socket.end('SMTP ready\r\n\r\n'));
    const error = await upstreamFailure(client(url).post('/x', '{}', undefined));
    expect(error.kind).toBe('malformed');
  });
});
