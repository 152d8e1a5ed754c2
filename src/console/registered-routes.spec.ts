import { describe, expect, it } from '@jest/globals';
import type { HttpAdapterHost } from '@nestjs/core';
import { fastify } from 'fastify';
import { RegisteredRoutes } from './registered-routes.js';

describe('RegisteredRoutes', () => {
  it('reports the administration routes registered after it was built, by method and path', async () => {
    const server = fastify();
    const routes = new RegisteredRoutes({ httpAdapter: { getInstance: () => server } } as unknown as HttpAdapterHost);
    server.get('/admin/budgets', () => ({}));
    server.post('/admin/reconciliations', () => ({}));
    // Another method on a path the console reads with GET does not count.
    server.post('/admin/ledger', () => ({}));
    await server.ready();
    expect(routes.available()).toEqual({
      ledger: false,
      usage: false,
      budgets: true,
      reconciliations: true,
      inquiries: false,
      trends: false,
      forecast: false,
      parked: false,
      parkedActions: false,
      operatorActions: false,
      webhooks: false,
    });
    await server.close();
  });
});
