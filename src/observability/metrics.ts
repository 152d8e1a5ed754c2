import { readFileSync } from 'node:fs';
import { Injectable, Optional } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What a gauge reads at scrape time; set by the module that owns the state (health/state-gauges.ts). */
export interface StateProbes {
  /** True when the record store can be used now (always true for the in-process store). */
  storeUp(): boolean;
  /** Epoch ms at which the held access token expires; undefined while none is held. */
  accessTokenExpiresAt(): number | undefined;
}

/** Reasons of vgw_auth_failures_total; the label values are fixed here so each exists at 0. */
export const AUTH_FAILURE_REASONS = ['missing_credential', 'invalid_api_key', 'invalid_jwt', 'missing_scope'] as const;

/** Results of vgw_reuse_total. */
export const REUSE_RESULTS = ['hit', 'join', 'stale', 'miss', 'not_cached'] as const;
export type ReuseResult = (typeof REUSE_RESULTS)[number];

/** Route label of requests that matched no route (the raw path never becomes a label). */
export const UNMATCHED_ROUTE = 'unmatched';
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Every Prometheus metric of one gateway process, on its own registry (so several app
 * instances can live in one test process). Labels carry route templates, operation names,
 * outcomes and bounded reasons only: never a client secret, token, trackId or personal
 * identifier. Gauges of state read that state when scraped (collect), so they are true at
 * every scrape. docs/runbooks.md names the alerts built on them.
 */
@Injectable()
export class GatewayMetrics {
  readonly registry = new Registry();

  /**
   * Registered first, so `/metrics` opens with the running build rather than with the request
   * series an alert reads, pre-created at 0 (e.g. `status="500",code="internal"`, docs/operations.md).
   */
  private readonly buildInfo = new Gauge({
    name: 'vgw_build_info',
    help: 'Always 1; the labels name the running build',
    labelNames: ['version', 'commit', 'node'] as const,
    registers: [this.registry],
  });

  readonly httpRequests = new Histogram({
    name: 'vgw_http_request_duration_seconds',
    help: 'Requests served by the gateway, by route template, method, status and problem code (none for successes)',
    labelNames: ['route', 'method', 'status', 'code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly authFailures = new Counter({
    name: 'vgw_auth_failures_total',
    help: 'Requests refused with 401 or 403, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly quotaRejections = new Counter({
    name: 'vgw_quota_rejections_total',
    help: 'Inquiries refused with 429 rate_limited, by quota (client or user)',
    labelNames: ['scope'] as const,
    registers: [this.registry],
  });

  readonly validationFailures = new Counter({
    name: 'vgw_validation_failures_total',
    help: 'Requests refused with 400 validation_failed (body parser included), by route template',
    labelNames: ['route'] as const,
    registers: [this.registry],
  });

  readonly upstreamCalls = new Histogram({
    name: 'vgw_upstream_call_duration_seconds',
    help: 'Upstream HTTP calls by operation and outcome',
    labelNames: ['operation', 'outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly tokenRenewals = new Counter({
    name: 'vgw_token_renewals_total',
    help: 'Upstream token renewals performed by this process, by grant and result',
    labelNames: ['grant', 'result'] as const,
    registers: [this.registry],
  });

  readonly tokenRenewalFailures = new Counter({
    name: 'vgw_token_renewal_failures_total',
    help: 'Token renewals that ended without a usable token, by kind of failure',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly tokenAdoptions = new Counter({
    name: 'vgw_token_adopted_total',
    help: 'Token records adopted from the shared store (renewed by another replica)',
    registers: [this.registry],
  });

  readonly inquiries = new Counter({
    name: 'vgw_inquiries_total',
    help: 'Inquiries by operation and final status',
    labelNames: ['operation', 'status'] as const,
    registers: [this.registry],
  });

  readonly idempotentReplays = new Counter({
    name: 'vgw_idempotent_replays_total',
    help: 'Responses replayed for a repeated Idempotency-Key',
    registers: [this.registry],
  });

  /** Reuse lookups of inquiries whose caller allowed reuse, by result (REUSE_RESULTS; zeroed by reuse/reuse-counters.ts). */
  readonly reuseLookups = new Counter({
    name: 'vgw_reuse_total',
    help: 'Inquiries whose caller allowed reuse (docs/api.md §2), by operation and result: hit (a stored answer), join (an identical inquiry in flight answered it), stale (served under stale-if-error), miss (sent upstream), not_cached (only-if-cached with nothing reusable: 504)',
    labelNames: ['operation', 'result'] as const,
    registers: [this.registry],
  });

  readonly reuseUnitsSaved = new Counter({
    name: 'vgw_reuse_units_saved_total',
    help: 'Cost units not spent because an answer was reused, by operation (each at its own type and price)',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly inquiriesAccepted = new Counter({
    name: 'vgw_inquiries_accepted_total',
    help: 'Inquiries answered 202 (Prefer: respond-async) and settled in the background, by operation',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly inquiryWaits = new Counter({
    name: 'vgw_inquiry_waits_total',
    help: 'Prefer: wait long-polls, by how they ended: woken (a settlement notice, or shutdown), timeout, or refused (this replica held its maximum)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly inquiryWaitsHeld = new Gauge({
    name: 'vgw_inquiry_waits_held',
    help: 'Prefer: wait long-polls this replica holds now',
    registers: [this.registry],
  });

  readonly circuitOpen = new Gauge({
    name: 'vgw_upstream_circuit_open',
    help: '1 while the upstream circuit breaker refuses inquiries',
    registers: [this.registry],
  });

  readonly redisCommands = new Histogram({
    name: 'vgw_redis_command_duration_seconds',
    help: 'Redis commands sent by the gateway, by command and outcome (ok or error)',
    labelNames: ['command', 'outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly redisCommandErrors = new Counter({
    name: 'vgw_redis_command_errors_total',
    help: 'Redis commands that failed (refused while disconnected, timed out, or answered with an error), by command',
    labelNames: ['command'] as const,
    registers: [this.registry],
  });

  private probes: StateProbes = { storeUp: () => true, accessTokenExpiresAt: () => undefined };

  constructor(@Optional() config?: ConfigService<AppConfig, true>) {
    const commit = config?.get('build', { infer: true }).commit ?? 'unknown';
    const probes = () => this.probes;
    new Gauge({
      name: 'vgw_store_up',
      help: '1 when the record store can be used (Redis connection ready, or the in-process store)',
      registers: [this.registry],
      collect() {
        this.set(probes().storeUp() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'vgw_token_expiry_seconds',
      help: 'Seconds until the held upstream token expires (negative once expired; no sample while none is held)',
      // A label, so that "no token" is no sample rather than a 0 that reads as "expiring now".
      labelNames: ['token'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const expiresAt = probes().accessTokenExpiresAt();
        if (expiresAt !== undefined) this.set({ token: 'access' }, (expiresAt - Date.now()) / 1000);
      },
    });
    this.buildInfo.set({ version: VERSION, commit, node: process.version }, 1);
    // Every rejection reason exists at 0 from start-up, so increase() sees the first one after a
    // start (docs/operations.md, "Metrics"); owners of other series zero theirs (the inquiry
    // service, the upstream client, the token renewal).
    for (const reason of AUTH_FAILURE_REASONS) this.authFailures.inc({ reason }, 0);
    for (const scope of ['client', 'user']) this.quotaRejections.inc({ scope }, 0);
    // Standard names (process_cpu_seconds_total, nodejs_heap_size_used_bytes, …): stock
    // Node.js dashboards work unchanged.
    collectDefaultMetrics({ register: this.registry });
  }

  setProbes(probes: StateProbes): void {
    this.probes = probes;
  }

  observeCall(operation: string, outcome: string, seconds: number): void {
    this.upstreamCalls.observe({ operation, outcome }, seconds);
  }

  observeRequest(route: string | undefined, method: string, status: number, code: string | undefined, seconds: number) {
    const routeLabel = route ?? UNMATCHED_ROUTE;
    this.httpRequests.observe(
      { route: routeLabel, method: KNOWN_METHODS.has(method) ? method : 'OTHER', status, code: code ?? 'none' },
      seconds,
    );
    if (code === 'validation_failed') this.validationFailures.inc({ route: routeLabel });
  }
}

/** The version from package.json (the commit comes from BUILD_COMMIT); `unknown` if unreadable. */
const VERSION = readVersion();

/**
 * package.json sits two folders up from dist/observability/ (the image, `start:prod`) and
 * src/observability/ (the tests), three from .build/src/observability/ (`npm run sandbox`).
 */
function readVersion(): string {
  for (const path of ['../../package.json', '../../../package.json']) {
    try {
      const { name, version } = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (name === 'verification-gateway' && typeof version === 'string') return version;
    } catch {
      // not there: the next candidate
    }
  }
  return 'unknown';
}
