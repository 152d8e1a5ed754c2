import { describe, expect, it } from '@jest/globals';
import { budgetForecasts, companyForecast, ratePerDay, runsOutAt } from './budget-forecast.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-24T10:00:00Z');

describe('budget forecast', () => {
  it('rates the last 7 days exactly, rounded down to hundredths', () => {
    expect(ratePerDay(14)).toBe('2.00');
    expect(ratePerDay(10)).toBe('1.42');
    expect(ratePerDay(0)).toBe('0.00');
  });

  it('runs out at now + remaining / rate, or not this window, or now when used up', () => {
    // 70 units in 7 days: 10 a day; 25 left: 2.5 days.
    expect(runsOutAt(NOW, 100, 75, 70, NOW + 30 * DAY)).toBe(NOW + 2.5 * DAY);
    expect(runsOutAt(NOW, 100, 75, 70, NOW + 2 * DAY)).toBeNull();
    expect(runsOutAt(NOW, 100, 100, 70, NOW + DAY)).toBe(NOW);
    expect(runsOutAt(NOW, 100, 0, 0, NOW + DAY)).toBeNull();
    // 3 units in 7 days, 1 left: 7/3 days, in whole milliseconds rounded down.
    expect(runsOutAt(NOW, 10, 9, 3, NOW + 30 * DAY)).toBe(NOW + Math.floor((7 * DAY) / 3));
  });

  it('takes every client for the * budget, and the budget state for what is used', () => {
    const forecasts = budgetForecasts(
      NOW,
      [
        {
          clientId: 'a',
          budgets: [
            {
              window: 'monthly',
              limitUnits: 100,
              spentUnits: 60,
              reservedUnits: 5,
              remainingUnits: 35,
              resetsAt: new Date(NOW + 20 * DAY).toISOString(),
            },
          ],
        },
        {
          clientId: '*',
          budgets: [
            {
              window: 'daily',
              limitUnits: 50,
              spentUnits: 10,
              reservedUnits: 0,
              remainingUnits: 40,
              resetsAt: new Date(NOW + 14 * 3_600_000).toISOString(),
            },
          ],
        },
      ],
      new Map([
        ['a', 35],
        ['b', 105],
      ]),
    );
    expect(forecasts[0]).toMatchObject({
      usedUnits: 65,
      lastDaysUnits: 35,
      ratePerDay: '5.00',
      runsOutAt: new Date(NOW + 7 * DAY).toISOString(),
    });
    // 140 in 7 days: 20 a day, 40 left: 2 days, after the day resets.
    expect(forecasts[1]).toMatchObject({ clientId: '*', lastDaysUnits: 140, runsOutAt: null });
  });

  it("projects the company's month from what is spent and the rate", () => {
    const forecast = companyForecast(NOW, { startsAt: NOW - 23 * DAY, resetsAt: NOW + 7 * DAY }, 1_000, 70);
    expect(forecast).toMatchObject({ spentUnits: 1_000, ratePerDay: '10.00', projectedUnits: 1_070 });
  });
});
