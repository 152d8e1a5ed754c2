import { describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { LedgerCalls, LedgerUnavailableError } from './ledger-call.js';

describe('LedgerCalls', () => {
  const refused = () => Promise.reject(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' }));

  it("logs a failure once per spell for its own gateway, and one gateway's line never silences another's", async () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      const [first, second] = [new LedgerCalls(), new LedgerCalls()];
      for (const calls of [first, first, second]) {
        await expect(calls.run('ledger read', refused)).rejects.toBeInstanceOf(LedgerUnavailableError);
      }
      expect(errors.mock.calls.map(([line]) => String(line))).toEqual([
        'ledger read failed: ECONNREFUSED: connection refused',
        'ledger read failed: ECONNREFUSED: connection refused',
      ]);
    } finally {
      errors.mockRestore();
    }
  });
});
