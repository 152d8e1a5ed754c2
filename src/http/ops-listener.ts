import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { clientErrorHandler, rejectConnect } from '../problem/framework-errors.js';
import { closeLingeringConnections } from './lingering-connections.js';

/**
 * The routes operators and Prometheus use, by their registered path (a route's definition, never
 * a request's spelling of it): kept off the port an Ingress publishes when OPS_PORT is set.
 */
function isOpsRoute(path: string): boolean {
  return (
    path === '/metrics' ||
    path === '/docs' ||
    path.startsWith('/docs/') ||
    path === '/docs-json' ||
    // Administration (docs/api.md §6): the ledger, usage, budgets, reconciliations, the console.
    path.startsWith('/admin/') ||
    path === '/console' ||
    path.startsWith('/console/')
  );
}

/** The router constraint that binds a route to the ops listener. */
const LISTENER = 'listener';
const OPS = 'ops';

export interface OpsListenerSettings {
  port: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/**
 * `OPS_PORT` (docs/operations.md): a second HTTP server on its own port, feeding the same Fastify
 * instance (`fastify.routing`, as Fastify does for its own extra bindings), so the operations
 * endpoints keep the access log, metrics, request ids and problem answers of every other route.
 *
 * The two are separated in the router itself, not by a filter on request URLs: a route
 * constraint (find-my-way's constraint strategies, as Fastify's `version` and `host` are) derives
 * `listener: ops` from the local port a request arrived on, the ops routes are registered with
 * that constraint only, and `mustMatchWhenDerived` lets a request derived `ops` match no route
 * without it. So on the public port no route named /metrics or /docs* exists for any spelling the
 * router normalises to it, and on the ops port the inquiry API does not exist: both answer the
 * router's 404 `not_found`. The server starts when the app listens and closes with it.
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
  server.on('connect', rejectConnect);

  fastify.addConstraintStrategy({
    name: LISTENER,
    // One store per route node: the handler registered for each listener value.
    storage: () => {
      const handlers = new Map<unknown, unknown>();
      return {
        // find-my-way's Handler type is not exported through Fastify: the store holds what it gave.
        get: (value: unknown) => (handlers.get(value) ?? null) as never,
        set: (value: unknown, handler: unknown) => void handlers.set(value, handler),
      };
    },
    deriveConstraint: (request: IncomingMessage) => (request.socket.localPort === settings.port ? OPS : undefined),
    mustMatchWhenDerived: true,
  });
  // Before any route is registered (Nest's at app.init(), the OpenAPI ones at setupOpenApi()).
  fastify.addHook('onRoute', (route) => {
    if (isOpsRoute(route.url)) route.constraints = { ...route.constraints, [LISTENER]: OPS };
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
    server.close(() => done());
    // Idle keep-alive connections (Prometheus keeps one), and a browser's unused ones (the console).
    closeLingeringConnections(server);
  });
}
