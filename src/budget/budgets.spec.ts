import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { ConfigService } from '@nestjs/config';
import { InquiryPrices } from '../accounting/inquiry-prices.js';
import type { AppConfig } from '../config/app-config.js';
import { DEFAULT_INQUIRY_PRICES, type BudgetEntry } from '../config/budget-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { ProblemException } from '../problem/problem.js';
import { BudgetCalendar } from './budget-windows.js';
import { MemoryBudgetStore } from './budget.store.js';
import { Budgets } from './budgets.js';
import { RefusalTally } from '../caller-auth/refusal-tally.js';

const dir = mkdtempSync(join(tmpdir(), 'vgw-budgets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The slices Budgets and InquiryPrices read, as loadConfig would give them. */
function config(entries: BudgetEntry[], file?: string): ConfigService<AppConfig, true> {
  const slices: Partial<AppConfig> = {
    budgets: { entries, timeZone: 'UTC', calendar: 'gregory', ...(file ? { file } : {}) },
    inquiryPrices: DEFAULT_INQUIRY_PRICES,
    secretFiles: { pollIntervalMs: 50 },
  };
  return { get: (name: keyof AppConfig) => slices[name] } as unknown as ConfigService<AppConfig, true>;
}

function budgets(entries: BudgetEntry[], file?: string) {
  const settings = config(entries, file);
  const metrics = new GatewayMetrics();
  const store = new MemoryBudgetStore();
  const service = new Budgets(
    settings,
    new InquiryPrices(settings),
    store,
    metrics,
    new RefusalTally('UTC', metrics.registry),
  );
  /** What the inquiry path does (through the ledger's queue): the reservation, or its refusal thrown. */
  const reserve = async (
    clientId: string,
    operation: 'shahkar' | 'iban',
    handling: 'standard' | 'advanced',
    trackId: string,
  ) => {
    const request = service.reservationFor(clientId, operation, handling, trackId, Date.now() + 60_000);
    if (!request) return undefined;
    const result = await store.reserve(request);
    if (!result.admitted) throw service.refusal(request, result, { clientId, operation });
    return request;
  };
  return { budgets: service, metrics, store, reserve };
}

afterEach(() => {
  jest.restoreAllMocks();
});

describe('Budgets', () => {
  it('sends nothing for a client without a budget when only other clients have one', () => {
    const { budgets: none } = budgets([]);
    expect(none.reservationFor('svc-a', 'shahkar', 'standard', 't', Date.now() + 1000)).toBeUndefined();
    const { budgets: others } = budgets([{ clientId: 'svc-b', daily: 5 }]);
    expect(others.reservationFor('svc-a', 'shahkar', 'standard', 't', Date.now() + 1000)).toBeUndefined();
  });

  it('refuses with 429 budget_exhausted, Retry-After to the reset, and logs the exhaustion once', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { metrics, reserve } = budgets([{ clientId: 'svc-a', daily: 4 }]);
    await reserve('svc-a', 'shahkar', 'advanced', 't1');
    const refusals: ProblemException[] = [];
    for (const id of ['t2', 't3']) {
      await reserve('svc-a', 'shahkar', 'advanced', id).catch((error: unknown) => {
        refusals.push(error as ProblemException);
      });
    }
    expect(refusals.map((p) => [p.status, p.code])).toEqual([
      [429, 'budget_exhausted'],
      [429, 'budget_exhausted'],
    ]);
    expect(refusals[0].detail).toMatch(
      /^The daily budget of this client is exhausted: 1 unit\(s\) remain and this inquiry costs 3; it resets at /,
    );
    const retryAfter = Number(refusals[0].headers['retry-after'] ?? refusals[0].headers['Retry-After']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(refusals[0].trackId).toBeUndefined();
    const exhausted = warn.mock.calls.filter(([line]) => (line as { msg?: string }).msg === 'budget exhausted');
    expect(exhausted).toEqual([[expect.objectContaining({ budget: 'svc-a', window: 'daily', limitUnits: 4 })]]);
    const text = await metrics.registry.metrics();
    expect(text).toContain('vgw_budget_refusals_total{client="svc-a",window="daily"} 2');
    expect(text).toContain('vgw_budget_reserved_units{client="svc-a",window="daily"} 3');
  });

  it('resolves an unknown by exactly its recorded reservation, once per revision, whatever the prices now', async () => {
    const { budgets: service, store, reserve } = budgets([{ clientId: '*', monthly: 10 }]);
    await reserve('svc-a', 'iban', 'advanced', 'u1');
    await store.settle('u1', 'unknown', Date.now());
    expect((await service.view('*')).budgets[0]).toMatchObject({ spentUnits: 3, remainingUnits: 7 });
    const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(Date.now());
    const move = { trackId: 'u1', budgets: ['*'], daily: windows.daily.id, monthly: windows.monthly.id };
    // Given back (charged no), twice told: once; then a correction takes them again.
    await service.resolveUnknown({ ...move, revision: 1, charged: false, units: 3 });
    await service.resolveUnknown({ ...move, revision: 1, charged: false, units: 3 });
    expect((await service.view('*')).budgets[0]).toMatchObject({ spentUnits: 0, remainingUnits: 10 });
    await service.resolveUnknown({ ...move, revision: 2, charged: true, units: 3 });
    expect((await service.view('*')).budgets[0]).toMatchObject({ spentUnits: 3, remainingUnits: 7 });
  });

  it('moves nothing for an inquiry the store no longer counts, and says so in a metric and a warning', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { budgets: service, metrics, reserve } = budgets([{ clientId: '*', monthly: 10 }]);
    await reserve('svc-a', 'iban', 'standard', 'spent');
    const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(Date.now());
    // 'forgotten' has no held marker (Redis restarted empty, or a build before the markers settled it).
    const move = { trackId: 'forgotten', budgets: ['*'], daily: windows.daily.id, monthly: windows.monthly.id };
    await service.resolveUnknown({ ...move, revision: 1, charged: false, units: 3 });
    expect((await service.view('*')).budgets[0]).toMatchObject({ reservedUnits: 1, spentUnits: 0 });
    expect(await metrics.registry.getSingleMetricAsString('vgw_budget_moves_not_held_total')).toContain(
      'vgw_budget_moves_not_held_total 1',
    );
    expect(warn).toHaveBeenCalledWith(expect.objectContaining({ trackId: 'forgotten', revision: 1 }));
  });

  it('applies a changed BUDGETS_FILE while running and keeps the budgets when the change is bad', async () => {
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const file = join(dir, 'budgets.json');
    writeFileSync(file, '[{"clientId":"svc-a","daily":5}]');
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const { budgets: service, metrics } = budgets([{ clientId: 'svc-a', daily: 5 }], file);
      service.onModuleInit();
      writeFileSync(file, '[{"clientId":"svc-a","daily":7}]\n');
      jest.advanceTimersByTime(50);
      expect((await service.view('svc-a')).budgets[0]).toMatchObject({ limitUnits: 7 });
      writeFileSync(file, '[{"clientId":"svc-a","daily":-1}]');
      jest.advanceTimersByTime(50);
      expect((await service.view('svc-a')).budgets[0]).toMatchObject({ limitUnits: 7 });
      expect(await metrics.registry.metrics()).toContain('vgw_secret_file_rejected{variable="BUDGETS_FILE"} 1');
      service.onApplicationShutdown();
    } finally {
      jest.useRealTimers();
    }
  });
});
