import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Budgets } from '../budget/budgets.js';
import type { AppConfig } from '../config/app-config.js';
import { describeLedgerFailure } from '../ledger/ledger-call.js';
import { LedgerStore } from '../ledger/ledger.store.js';
import { BudgetThresholds } from './budget-thresholds.js';
import { nextAttempt } from './retry-schedule.js';
import { WebhookEndpoints } from './webhook-endpoints.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhookOutbox, type ClaimedDelivery } from './webhook-outbox.js';
import { WebhookOutcomes } from './webhook-outcomes.js';
import { DELIVERY_TIMEOUT_MS, WebhookSender } from './webhook-sender.js';
import type { DeliverySettings, WebhookEndpoint } from '../config/webhooks-config.js';
import { WakeablePause } from '../vocabulary/wakeable-pause.js';

/** A claim holds its row this long: an attempt ends within 10 s, so only a dead replica's lease runs out. */
const LEASE_MS = 3 * DELIVERY_TIMEOUT_MS;
/** The oldest-pending gauges, the budget thresholds and the endpoints' heartbeat: this often. */
const OBSERVE_MS = 5_000;
/** Pruning of delivered and dead rows: this often. */
const PRUNE_MS = 15 * 60_000;
/** Dead rows and those of endpoints no longer configured are kept this long for the operators. */
const DEAD_RETENTION_MS = 30 * 86_400_000;

/**
 * Every replica's delivery worker (docs/api.md §9): claims due deliveries of each enabled endpoint
 * (at most WEBHOOKS_MAX_IN_FLIGHT in flight per endpoint, so a slow receiver delays only its own),
 * posts them, and records each outcome under its lease: 2xx delivered; otherwise retried with
 * backoff (retry-schedule.ts) until the retry period ends, then dead; a 410 disables the endpoint
 * until its configuration changes. It also mirrors the configuration into the outbox, watches
 * budgets for thresholds and prunes the outbox. Nothing runs without endpoints.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap {
  private readonly logger = new Logger('Webhooks');
  private readonly settings: DeliverySettings;
  /**
   * WEBHOOKS or WEBHOOKS_FILE set. A replica without them runs nothing here and never mirrors its
   * (empty) configuration over the endpoints its peers configured.
   */
  private readonly configured: boolean;
  /** WEBHOOKS_DELIVER: false on the gateway's pods beside a drainer Deployment, which delivers; they only mirror. */
  private readonly delivers: boolean;
  private readonly outbox: WebhookOutbox;
  private readonly outcomes: WebhookOutcomes;
  private readonly sender = new WebhookSender();
  private readonly thresholds: BudgetThresholds;
  private readonly inFlight = new Map<string, Set<Promise<void>>>();
  /**
   * Endpoints whose last claim filled every free lane: more may be due, so freed lanes claim again
   * without waiting for the poll. After a claim that found fewer, the next poll looks (a claim per
   * finished delivery cost a statement per delivery; docs/performance.md, "Webhooks").
   */
  private readonly backlogged = new Set<string>();
  /** Endpoints a 410 disabled (re-read with the gauges, on a change and after a 410 here); the claim checks too. */
  private disabled = new Set<string>();
  private syncedVersion = 0;
  private nextObserve = 0;
  /** The endpoints' heartbeat in the outbox (WebhookOutbox.syncEndpoints), every OBSERVE_MS. */
  private nextMirror = 0;
  private nextPrune = 0;
  private failing = false;
  private stopping = false;
  private loop: Promise<void> = Promise.resolve();
  private readonly pause = new WakeablePause();

  constructor(
    config: ConfigService<AppConfig, true>,
    store: LedgerStore,
    budgets: Budgets,
    private readonly endpoints: WebhookEndpoints,
    private readonly metrics: WebhookMetrics,
  ) {
    const webhooks = config.get('webhooks', { infer: true });
    this.settings = webhooks.delivery;
    this.configured = webhooks.configured;
    this.delivers = webhooks.deliver;
    this.outbox = new WebhookOutbox(store);
    this.outcomes = new WebhookOutcomes(this.outbox);
    this.thresholds = new BudgetThresholds(budgets, this.outbox);
    this.metrics.declare(webhooks.endpoints.map((endpoint) => endpoint.id));
  }

  onApplicationBootstrap(): void {
    if (this.configured) this.loop = this.run();
  }

  /** The shutdown sequence's step: stops claiming, then waits for the attempts in flight (each ends within 10 s). */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.endpoints.stop();
    this.pause.end();
    await this.loop;
    await Promise.allSettled([...this.inFlight.values()].flatMap((lane) => [...lane]));
    await this.sender.close();
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      try {
        await this.tick();
        if (this.failing) this.logger.log('webhook deliveries resumed');
        this.failing = false;
      } catch (error) {
        // Once per outage: the events wait in the outbox (docs/operations.md, "Webhooks").
        if (!this.failing) this.logger.warn(`webhook deliveries wait: ${describeLedgerFailure(error)}`);
        this.failing = true;
      }
      await this.pause.for(this.settings.pollMs);
    }
  }

  private async tick(): Promise<void> {
    const version = this.endpoints.version;
    const configChanged = this.syncedVersion !== version;
    const now = Date.now();
    if (configChanged || now >= this.nextMirror) {
      this.nextMirror = now + OBSERVE_MS;
      await this.outbox.syncEndpoints(this.endpoints.all, { configChanged });
      if (configChanged) this.metrics.declare(this.endpoints.all.map((endpoint) => endpoint.id));
      this.syncedVersion = version;
    }
    const endpoints = this.endpoints.all;
    if (!this.delivers) return;
    // Pruning first: with no endpoint left too (the rows of removed ones go after their retention),
    // and before the thresholds, which read Redis: a Redis outage must not stop the pruning.
    if (now >= this.nextPrune) {
      this.nextPrune = now + PRUNE_MS;
      const pruned = await this.outbox.prune(this.settings.deliveredRetentionMs, DEAD_RETENTION_MS);
      if (pruned > 0) this.logger.log(`webhook outbox: ${pruned} finished deliveries pruned`);
    }
    if (endpoints.length === 0) return;
    if (configChanged || now >= this.nextObserve) this.disabled = await this.outbox.disabledEndpoints();
    for (const endpoint of endpoints) {
      if (this.stopping || this.disabled.has(endpoint.id)) continue;
      const lane = this.inFlight.get(endpoint.id) ?? new Set();
      this.inFlight.set(endpoint.id, lane);
      const free = this.settings.maxInFlight - lane.size;
      if (free <= 0) continue;
      const claims = await this.outbox.claim(endpoint.id, free, LEASE_MS);
      if (claims.length === free) this.backlogged.add(endpoint.id);
      else this.backlogged.delete(endpoint.id);
      for (const claim of claims) {
        const attempt: Promise<void> = this.deliver(endpoint, claim)
          .catch((error: unknown) => this.logger.warn(`webhook outcome not recorded: ${describeLedgerFailure(error)}`))
          .finally(() => {
            // A backlogged endpoint claims again once half its lanes are free, not after the poll
            // (bench:webhooks: 478 -> 1013/s), and not once per delivery.
            lane.delete(attempt);
            if (this.backlogged.has(endpoint.id) && lane.size <= this.settings.maxInFlight / 2) this.pause.wake();
          });
        lane.add(attempt);
      }
    }
    if (now >= this.nextObserve) {
      this.nextObserve = now + OBSERVE_MS;
      this.metrics.observeOldest(
        endpoints.map((endpoint) => endpoint.id),
        await this.outbox.oldestPending(),
      );
      if (this.endpoints.subscribes('budget.threshold')) await this.thresholds.check();
    }
  }

  /** One attempt and its outcome, written under the claim's lease (a lost lease writes nothing). */
  private async deliver(endpoint: WebhookEndpoint, claim: ClaimedDelivery): Promise<void> {
    const body = JSON.stringify({ type: claim.type, timestamp: claim.occurredAt.toISOString(), data: claim.data });
    const result = await this.sender.send(endpoint, claim.id, body);
    const labels = { endpoint: endpoint.id };
    if ('status' in result && result.status >= 200 && result.status < 300) {
      if (await this.outcomes.write(claim, { status: 'delivered', httpStatus: result.status })) {
        this.metrics.attempts.inc({ ...labels, result: 'delivered' });
      }
      return;
    }
    const failure = 'status' in result ? { httpStatus: result.status, error: `HTTP ${result.status}` } : result;
    if ('status' in result && result.status === 410) {
      await this.outbox.disable(endpoint.id);
      this.disabled.add(endpoint.id);
      this.logger.warn(`webhook endpoint ${endpoint.id} answered 410 Gone: disabled until its configuration changes`);
    }
    const next = nextAttempt(
      { attempt: claim.attempt, retrySince: claim.retrySince.getTime(), now: Date.now() },
      this.settings,
    );
    if (next.dead) {
      if (await this.outcomes.write(claim, { status: 'dead', ...failure })) {
        this.metrics.attempts.inc({ ...labels, result: 'dead' });
        this.logger.warn(`webhook delivery ${claim.id} to ${endpoint.id} is dead after ${claim.attempt} attempts`);
      }
      return;
    }
    if (await this.outcomes.write(claim, { status: 'pending', retryInMs: next.delayMs, ...failure })) {
      this.metrics.attempts.inc({ ...labels, result: 'retried' });
    }
  }
}
