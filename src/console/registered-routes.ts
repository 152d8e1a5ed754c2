import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';

/** The administration routes the console reads, by what the page calls each (docs/api.md §7). */
export const ADMIN_ROUTES = {
  ledger: 'GET /admin/ledger',
  usage: 'GET /admin/usage',
  budgets: 'GET /admin/budgets',
  reconciliations: 'POST /admin/reconciliations',
  inquiries: 'GET /admin/inquiries',
  trends: 'GET /admin/trends',
  forecast: 'GET /admin/forecast',
  parked: 'GET /admin/ledger/parked',
  operatorActions: 'GET /admin/operator-actions',
  webhooks: 'GET /admin/webhooks/deliveries',
  /** Re-drive and discard (the console's buttons on each parked entry). */
  parkedActions: 'POST /admin/ledger/parked/:id/redrive',
} as const;

export type AdminRoute = keyof typeof ADMIN_ROUTES;

/**
 * Which administration routes this build serves, so the console shows "not available in this
 * build" for a missing one instead of calling it for a 404. Recorded from Fastify's `onRoute`
 * hook: this provider is built when the Nest application is created, before `app.init()`
 * registers the controllers' routes.
 */
@Injectable()
export class RegisteredRoutes {
  private readonly seen = new Set<string>();

  constructor(adapterHost: HttpAdapterHost) {
    // A Nest application without an HTTP server (a testing module) serves no route at all.
    const fastify = adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    fastify?.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) this.seen.add(`${method} ${route.url}`);
    });
  }

  available(): Record<AdminRoute, boolean> {
    const answer = {} as Record<AdminRoute, boolean>;
    for (const [name, route] of Object.entries(ADMIN_ROUTES)) answer[name as AdminRoute] = this.seen.has(route);
    return answer;
  }
}
