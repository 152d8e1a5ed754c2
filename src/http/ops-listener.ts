import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { clientErrorHandler } from '../problem/framework-errors.js';
import { sendProblem } from '../problem/problem.filter.js';
import { ProblemException } from '../problem/problem.js';

/** What operators and Prometheus use: kept off the port an Ingress publishes when OPS_PORT is set. */
function isOpsPath(url: string): boolean {
  const path = url.split('?')[0];
  return path === '/metrics' || path === '/docs' || path.startsWith('/docs/') || path === '/docs-json';
}

export interface OpsListenerSettings {
  port: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/**
 * `OPS_PORT` (docs/operations.md): a second HTTP server on its own port, feeding the same Fastify
 * instance (`fastify.routing`, as Fastify does for its own extra bindings), so the operations
 * endpoints keep the access log, metrics, request ids and problem answers of every other route.
 * One hook splits the two: `/metrics` and `/docs*` are answered on the ops port only, and
 * everything else on the main port only; the other port answers 404 `not_found`. The server
 * starts when the app listens and closes with it.
 */
export function installOpsListener(app: NestFastifyApplication, settings: OpsListenerSettings): void {
  const fastify = app.getHttpAdapter().getInstance();
  const server: Server = createServer(
    {
      requestTimeout: settings.requestTimeoutMs,
      headersTimeout: Math.min(10_000, settings.requestTimeoutMs),
      keepAliveTimeout: settings.keepAliveTimeoutMs,
    },
    (request, response) => fastify.routing(request, response),
  );
  server.on('clientError', clientErrorHandler);

  fastify.addHook('onRequest', (request, reply, done) => {
    const onOpsPort = request.raw.socket.localPort === settings.port;
    if (isOpsPath(request.url) !== onOpsPort) {
      sendProblem(reply, new ProblemException('not_found', 'No such resource.'));
      return;
    }
    done();
  });
  fastify.addHook('onListen', (done) => {
    // On the address the main port was given (0.0.0.0 in production, loopback in tests).
    const { address } = fastify.server.address() as AddressInfo;
    server.once('error', done);
    server.listen(settings.port, address, () => {
      server.off('error', done);
      done();
    });
  });
  fastify.addHook('onClose', (_instance, done) => {
    if (!server.listening) return done();
    // Idle keep-alive connections (Prometheus keeps one) are closed by close() itself.
    server.close(() => done());
  });
}
