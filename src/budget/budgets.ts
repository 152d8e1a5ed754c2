import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Counter, Gauge } from 'prom-client';
import { InquiryPrices } from '../accounting/inquiry-prices.js';
import type { AppConfig } from '../config/app-config.js';
import { ALL_CALLERS, parseBudgets, type BudgetEntry } from '../config/budget-config.js';
import { SecretFileWatcher } from '../config/secret-file-watcher.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import { RefusalTally } from '../caller-auth/refusal-tally.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { ProblemException } from '../problem/problem.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';
import { BUDGET_WINDOWS, BudgetCalendar, type BudgetWindow, type BudgetWindowName } from './budget-windows.js';
import {
  BudgetStore,
  type BudgetLimits,
  type BudgetMove,
  type BudgetUsage,
  type ReserveRequest,
  type ReserveResult,
} from './budget.store.js';

/** One budget's state, as `GET /v1/budget` shows it (docs/api.md §6). */
export interface BudgetView {
  window: BudgetWindowName;
  limitUnits: number;
  spentUnits: number;
  reservedUnits: number;
  remainingUnits: number;
  resetsAt: string;
}

/** The budgets of one client id (or `*`, all callers together). */
export interface ClientBudgets {
  clientId: string;
  budgets: BudgetView[];
}

/**
 * Spend budgets per client and for all callers (docs/api.md §6, "Budgets"): the price of an
 * inquiry is reserved before the upstream call, atomically across replicas (BudgetStore, run
 * with the ledger's duty), then committed when it succeeds or ends `unknown` (possibly
 * charged), released when it failed without a charge or was refused before sending. A budget that does not fit is 429
 * `budget_exhausted` before a trackId is stamped. Without budgets configured, nothing here runs
 * on the inquiry path.
 */
@Injectable()
export class Budgets implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Budgets');
  private readonly calendar: BudgetCalendar;
  private byClient = new Map<string, BudgetEntry>();
  private watcher: SecretFileWatcher | null = null;
  private readonly limitGauge: Gauge<'client' | 'window'>;
  private readonly refusals: Counter<'client' | 'window'>;
  private readonly spentGauge: Gauge<'client' | 'window'>;
  private readonly reservedGauge: Gauge<'client' | 'window'>;
  private readonly movesNotHeld: Counter;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly prices: InquiryPrices,
    private readonly store: BudgetStore,
    metrics: GatewayMetrics,
    private readonly tally: RefusalTally,
  ) {
    const settings = config.get('budgets', { infer: true });
    this.calendar = new BudgetCalendar(settings.timeZone, settings.calendar);
    const registry = metrics.registry;
    this.movesNotHeld = new Counter({
      name: 'vgw_budget_moves_not_held_total',
      help: 'Reconciliation budget moves that moved nothing: the budget store no longer counted the inquiry',
      registers: [registry],
    });
    const labelNames = ['client', 'window'] as const;
    this.limitGauge = new Gauge({
      name: 'vgw_budget_limit_units',
      help: 'Configured budget in cost units, by client (* = all callers) and window',
      labelNames,
      registers: [registry],
    });
    // Read at scrape time from the shared counters, so every replica shows the deployment's state.
    const readUsage = () => this.usage();
    const usageGauge = (name: string, help: string, pick: (usage: BudgetUsage) => number) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        async collect(this: Gauge<'client' | 'window'>) {
          // Unreachable Redis: the last values stay (vgw_store_up says why).
          const usage = await readUsage().catch(() => null);
          for (const [key, value] of usage ?? []) {
            const [client, window] = key.split('|');
            this.set({ client, window }, pick(value));
          }
        },
      });
    this.spentGauge = usageGauge('vgw_budget_spent_units', 'Units spent in the current window', (u) => u.spent);
    this.reservedGauge = usageGauge(
      'vgw_budget_reserved_units',
      'Units reserved by inquiries in flight in the current window',
      (u) => u.reserved,
    );
    this.refusals = new Counter({
      name: 'vgw_budget_refusals_total',
      help: 'Inquiries refused with 429 budget_exhausted, by the budget (client or *) and window that refused',
      labelNames,
      registers: [registry],
    });
    this.apply(settings.entries);
    if (settings.file) {
      this.watcher = new SecretFileWatcher({
        variable: 'BUDGETS_FILE',
        path: settings.file,
        intervalMs: config.get('secretFiles', { infer: true }).pollIntervalMs,
        logger: this.logger,
        registry,
        apply: (content) => {
          const problems: string[] = [];
          const entries = parseBudgets(content, problems);
          if (problems.length === 0) this.apply(entries);
          return problems;
        },
      });
    }
  }

  onModuleInit(): void {
    this.watcher?.start();
  }

  onApplicationShutdown(): void {
    this.watcher?.stop();
  }

  /**
   * What the inquiry would reserve in every budget that applies to the client (its own and
   * `*`): its price, the current day and month, the limits. Undefined when no budget applies:
   * nothing is sent then. The ledger's queue sends it with the inquiry's duty, atomically
   * (ledger/ledger-queue.ts); a refused result becomes `refusal()`. `concludeAt`: the inquiry's
   * deadline; a reservation still held then is concluded as spent.
   */
  reservationFor(
    clientId: string,
    operation: InquiryOperation,
    handling: RequestHandlingType,
    trackId: string,
    concludeAt: number,
  ): ReserveRequest | undefined {
    if (this.byClient.size === 0) return undefined;
    const budgets = this.limitsFor(clientId);
    if (budgets.length === 0) return undefined;
    const now = Date.now();
    return {
      trackId,
      units: this.prices.unitsOf(operation, handling),
      now,
      concludeAt,
      windows: this.calendar.windowsAt(now),
      budgets,
    };
  }

  /**
   * 429 `budget_exhausted` for `clientId`'s refused reservation: counted (by the budget that
   * refused in the metrics; by the caller's client and operation in RefusalTally, for
   * GET /admin/trends), and logged once per budget and window deployment-wide (the script marks
   * the first refusal).
   */
  refusal(
    request: ReserveRequest,
    result: Extract<ReserveResult, { admitted: false }>,
    caller: { clientId: string; operation: InquiryOperation },
  ): ProblemException {
    const window = request.windows[result.window];
    this.refusals.inc({ client: result.budget, window: result.window });
    this.tally.count(caller.clientId, caller.operation, 'budget', request.now);
    if (result.first) {
      this.logger.warn({
        msg: 'budget exhausted',
        budget: result.budget,
        window: result.window,
        windowId: window.id,
        limitUnits: this.limitOf(result.budget, result.window),
        resetsAt: new Date(window.resetsAt).toISOString(),
      });
    }
    return exhausted(result.budget, window, Math.max(0, result.remaining), request.units, request.now);
  }

  /**
   * A reconciliation's move (docs/api.md §6): exactly the units recorded with the inquiry, to
   * exactly the budgets and windows it counted in; never today's prices or budgets. Once per
   * (trackId, revision), never an earlier after a later, and only while the store still counts
   * the inquiry (its held marker); the ledger records each move it applied.
   */
  async resolveUnknown(move: BudgetMove): Promise<void> {
    if ((await this.store.resolve(move, Date.now())) !== 'not_held') return;
    // Redis emptied, the month ended, or an older build settled it
    // (test/reconciliation.integration.spec.ts, 'gives nothing back to a window that forgot the units').
    this.movesNotHeld.inc();
    const msg = 'budget move not applied: the budget store no longer counts this inquiry';
    this.logger.warn({ msg, trackId: move.trackId, revision: move.revision });
  }

  /** `GET /v1/budget`: the caller's own budgets (none configured: an empty list). */
  async view(clientId: string): Promise<ClientBudgets> {
    const entry = this.byClient.get(clientId);
    if (!entry) return { clientId, budgets: [] };
    return (await this.states([entry]))[0];
  }

  /** `GET /admin/budgets`: every configured budget with its state. */
  all(): Promise<ClientBudgets[]> {
    return this.states([...this.byClient.values()]);
  }

  private limitsFor(clientId: string): BudgetLimits[] {
    const budgets: BudgetLimits[] = [];
    for (const name of clientId === ALL_CALLERS ? [ALL_CALLERS] : [clientId, ALL_CALLERS]) {
      const entry = this.byClient.get(name);
      if (entry) budgets.push({ name, daily: entry.daily ?? -1, monthly: entry.monthly ?? -1 });
    }
    return budgets;
  }

  private limitOf(name: string, window: BudgetWindowName): number | undefined {
    return this.byClient.get(name)?.[window];
  }

  /** Usage of every configured budget window (`<client>|<window>`), for the gauges. */
  private async usage(): Promise<Map<string, BudgetUsage>> {
    if (this.byClient.size === 0) return new Map();
    const usage = await this.store.read(this.calendar.windowsAt(Date.now()), [...this.byClient.keys()], Date.now());
    for (const key of usage.keys()) {
      const [client, window] = key.split('|') as [string, BudgetWindowName];
      if (this.byClient.get(client)?.[window] === undefined) usage.delete(key);
    }
    return usage;
  }

  private async states(entries: BudgetEntry[]): Promise<ClientBudgets[]> {
    const now = Date.now();
    const windows = this.calendar.windowsAt(now);
    const usage = await this.store.read(
      windows,
      entries.map((e) => e.clientId),
      now,
    );
    return entries.map((entry) => ({
      clientId: entry.clientId,
      budgets: BUDGET_WINDOWS.flatMap((name) => {
        const limit = entry[name];
        if (limit === undefined) return [];
        const { spent, reserved } = usage.get(`${entry.clientId}|${name}`) ?? { spent: 0, reserved: 0 };
        return [
          {
            window: name,
            limitUnits: limit,
            spentUnits: spent,
            reservedUnits: reserved,
            remainingUnits: Math.max(0, limit - spent - reserved),
            resetsAt: new Date(windows[name].resetsAt).toISOString(),
          },
        ];
      }),
    }));
  }

  /** The configured budgets (at startup and after a BUDGETS_FILE change); their series exist at once. */
  private apply(entries: BudgetEntry[]): void {
    this.byClient = new Map(entries.map((entry) => [entry.clientId, entry]));
    for (const gauge of [this.limitGauge, this.spentGauge, this.reservedGauge]) gauge.reset();
    this.refusals.reset();
    for (const entry of entries) {
      for (const window of BUDGET_WINDOWS) {
        const limit = entry[window];
        if (limit === undefined) continue;
        const labels = { client: entry.clientId, window };
        this.limitGauge.set(labels, limit);
        this.spentGauge.set(labels, 0);
        this.reservedGauge.set(labels, 0);
        this.refusals.inc(labels, 0);
      }
    }
  }
}

/** 429 `budget_exhausted` (docs/api.md §3, §6): which budget and window, what is left, when it resets. */
function exhausted(budget: string, window: BudgetWindow, remaining: number, units: number, now: number) {
  const whose = budget === ALL_CALLERS ? 'for all callers' : 'of this client';
  return new ProblemException(
    'budget_exhausted',
    `The ${window.window} budget ${whose} is exhausted: ${remaining} unit(s) remain and this inquiry costs ${units}; ` +
      `it resets at ${new Date(window.resetsAt).toISOString()}. Nothing was sent to the verification service.`,
    { headers: { [RETRY_AFTER_HEADER]: String(Math.max(1, Math.ceil((window.resetsAt - now) / 1000))) } },
  );
}
