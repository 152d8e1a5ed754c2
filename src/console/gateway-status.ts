import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { RedisConnection } from '../store/redis-connection.js';
import { TokenProvider } from '../token/token.provider.js';
import { UpstreamClient } from '../upstream/upstream.client.js';
import { LEDGER_STATUS, type LedgerStatus, type LedgerStatusSource } from '../ledger/ledger-status.js';
import { RegisteredRoutes, type AdminRoute } from './registered-routes.js';

/** `GET /admin/status` (docs/api.md §4): this replica now, for the console's "Now" panel. */
export interface GatewayStatus {
  checkedAt: string;
  build: { version: string; commit: string };
  token: {
    /** `valid`: a token is held and not yet expired; `expired`: held but past its expiry; `none`: none held yet. */
    state: 'valid' | 'expired' | 'none';
    validUntil: string | null;
    /** When this replica took the token it holds (its own renewal or another replica's). */
    renewedAt: string | null;
    /** Failed renewals since this replica started, in total and by reason. */
    renewalFailures: number;
    renewalFailuresByReason: Record<string, number>;
  };
  circuit: { state: 'closed' | 'open' | 'half-open' };
  redis: { mode: AppConfig['store']['mode']; reachable: boolean };
  heldLongPolls: number;
  /** null while the ledger is not configured in this build. */
  ledger:
    | (Omit<LedgerStatus, 'queueDepth' | 'queueOldestAgeSeconds'> & {
        queueDepth: number | null;
        queueOldestAgeSeconds: number | null;
      })
    | null;
  /** Which administration routes this build serves (the console hides what is absent). */
  routes: Record<AdminRoute, boolean>;
  /** The catalog's operations by name, built-ins first (the console's operation filter). */
  operations: string[];
  /**
   * 429s this replica gave since it started, from its metrics: refusals are answered before a
   * trackId exists, so they never reach the ledger (docs/operations.md, "The console").
   */
  refusals: {
    budget: Array<{ budget: string; window: string; count: number }>;
    quota: Array<{ scope: string; count: number }>;
  };
  /** The scopes of the key that asked: the console offers only what it may do (a retry needs ledger:reconcile). */
  scopes: string[];
}

/**
 * Reads the state the metrics already expose (the same numbers Prometheus scrapes) and the
 * owners' own getters; nothing here calls Redis, PostgreSQL or the upstream except the ledger's
 * status source, which is the ledger's to keep cheap.
 */
@Injectable()
export class GatewayStatusReader {
  private readonly logger = new Logger('Console');
  private readonly storeMode: AppConfig['store']['mode'];
  private readonly operations: string[];

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly metrics: GatewayMetrics,
    private readonly redis: RedisConnection,
    private readonly tokens: TokenProvider,
    private readonly upstream: UpstreamClient,
    private readonly routes: RegisteredRoutes,
    @Optional() @Inject(LEDGER_STATUS) private readonly ledger?: LedgerStatusSource,
  ) {
    this.storeMode = config.get('store', { infer: true }).mode;
    this.operations = config.get('operations', { infer: true }).map((operation) => operation.name);
  }

  async read(caller: Pick<Caller, 'scopes'>): Promise<GatewayStatus> {
    const now = Date.now();
    const expiresAt = this.tokens.accessTokenExpiresAt;
    const takenAt = this.tokens.accessTokenTakenAt;
    const failures = await this.metrics.tokenRenewalFailures.get();
    const byReason: Record<string, number> = {};
    for (const { labels, value } of failures.values) byReason[String(labels.reason)] = value;
    const build = (await this.metrics.registry.getSingleMetric('vgw_build_info')?.get())?.values[0]?.labels ?? {};
    return {
      checkedAt: new Date(now).toISOString(),
      build: { version: String(build.version ?? 'unknown'), commit: String(build.commit ?? 'unknown') },
      token: {
        state: expiresAt === undefined ? 'none' : expiresAt > now ? 'valid' : 'expired',
        validUntil: expiresAt === undefined ? null : new Date(expiresAt).toISOString(),
        renewedAt: takenAt === undefined ? null : new Date(takenAt).toISOString(),
        renewalFailures: Object.values(byReason).reduce((sum, n) => sum + n, 0),
        renewalFailuresByReason: byReason,
      },
      circuit: { state: this.upstream.circuitState },
      // The connection's own state, as vgw_store_up reads it: no PING per request.
      redis: { mode: this.storeMode, reachable: this.redis.client === null || this.redis.client.status === 'ready' },
      heldLongPolls: (await this.metrics.inquiryWaitsHeld.get()).values[0]?.value ?? 0,
      ledger: await this.ledgerStatus(),
      routes: this.routes.available(),
      operations: [...this.operations],
      refusals: await this.refusals(),
      scopes: [...caller.scopes].sort(),
    };
  }

  private async refusals(): Promise<GatewayStatus['refusals']> {
    // Registered by Budgets only when budgets run in this build: absent means none counted.
    const budget = (await this.metrics.registry.getSingleMetric('vgw_budget_refusals_total')?.get())?.values ?? [];
    const quota = (await this.metrics.quotaRejections.get()).values;
    return {
      budget: budget.map(({ labels, value }) => ({
        budget: String(labels.client),
        window: String(labels.window),
        count: value,
      })),
      quota: quota.map(({ labels, value }) => ({ scope: String(labels.scope), count: value })),
    };
  }

  private async ledgerStatus(): Promise<GatewayStatus['ledger']> {
    if (!this.ledger) return null;
    try {
      return await this.ledger.status();
    } catch (error) {
      this.logger.warn(`ledger status unavailable: ${(error as Error).message}`);
      return { database: 'postgres', databaseReachable: false, queueDepth: null, queueOldestAgeSeconds: null };
    }
  }
}
