/**
 * The bare reference proxy the gateway is measured against (docs: README "Performance"): plain
 * `node:http` and `ioredis`, doing the least an inquiry must do. Per request it parses the
 * JSON body, stamps a UUID trackId, makes one Redis SET (the record), one upstream call over a
 * keep-alive connection with a cached token, and replies. No validation, authentication,
 * idempotency, metrics, logging or circuit breaker: what the gateway costs above this is the
 * price of those, of the framework and of the transport.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Redis } from 'ioredis';
import {
  CHECK_SHAHKAR_PATH,
  GET_TOKEN_PATH,
  IBAN_INQUIRY_PATH,
} from '../test/upstream-simulator/upstream-simulator.js';

const RECORD_TTL_SECONDS = 86_400;

export interface ReferenceProxy {
  url: string;
  close(): Promise<void>;
}

interface UpstreamAnswer {
  status: number;
  body: string;
}

export async function startReferenceProxy(upstreamUrl: string, redisUrl: string): Promise<ReferenceProxy> {
  const redis = new Redis(redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  await redis.connect();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 128 });
  const upstream = new URL(upstreamUrl);

  const post = (path: string, body: string, token?: string): Promise<UpstreamAnswer> =>
    new Promise((resolve, reject) => {
      const headers: http.OutgoingHttpHeaders = {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      };
      if (token) headers.authorization = `Bearer ${token}`;
      const request = http.request(
        { host: upstream.hostname, port: upstream.port, path, method: 'POST', agent, headers },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(body);
    });

  let token = '';
  const renewToken = async (): Promise<void> => {
    const answer = await post(
      GET_TOKEN_PATH,
      JSON.stringify({ username: 'sandbox-user', password: 'sandbox-password' }),
    );
    const accessToken = (JSON.parse(answer.body) as { data?: { accessToken?: string } }).data?.accessToken;
    if (answer.status !== 200 || !accessToken) throw new Error(`GetToken answered ${answer.status}`);
    token = accessToken;
  };
  await renewToken();

  const inquire = async (
    operation: 'shahkar' | 'iban',
    input: Record<string, unknown>,
  ): Promise<{ status: number; body: string }> => {
    const trackId = randomUUID();
    await redis.set(
      `ref:inquiry:${trackId}`,
      JSON.stringify({ trackId, operation, status: 'pending', createdAt: new Date().toISOString() }),
      'EX',
      RECORD_TTL_SECONDS,
    );
    const fields =
      operation === 'iban'
        ? { iban: input.iban }
        : { nationalCode: input.nationalCode, mobileNumber: input.mobileNumber };
    const upstreamBody = JSON.stringify({ ...fields, requestHandlingType: 'standard', trackId });
    const path = operation === 'iban' ? IBAN_INQUIRY_PATH : CHECK_SHAHKAR_PATH;
    let answer = await post(path, upstreamBody, token);
    if (answer.status === 401) {
      await renewToken();
      answer = await post(path, upstreamBody, token);
    }
    const envelope = JSON.parse(answer.body) as { meta?: { isSuccess?: boolean }; data?: unknown };
    if (answer.status === 200 && envelope.meta?.isSuccess) {
      return { status: 200, body: JSON.stringify({ trackId, status: 'succeeded', data: envelope.data }) };
    }
    return { status: 502, body: JSON.stringify({ code: 'upstream_error', trackId }) };
  };

  const server = http.createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      let input: Record<string, unknown>;
      try {
        input = JSON.parse(text) as Record<string, unknown>;
      } catch {
        response.writeHead(400).end();
        return;
      }
      inquire(request.url === '/v1/kyc/iban' ? 'iban' : 'shahkar', input).then(
        ({ status, body }) => response.writeHead(status, { 'content-type': 'application/json' }).end(body),
        () => response.writeHead(503).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
      await redis.quit();
    },
  };
}
