import type { INestApplicationContext } from '@nestjs/common';
import { LedgerStartup } from '../ledger/ledger-startup.js';
import { TokenProvider } from '../token/token.provider.js';

/**
 * Resolves once everything `/health/startup` waits for has finished, successfully or not: the
 * first upstream token attempt and the embedded ledger's opening. An event to await, for the
 * sandbox's banner and the tests, instead of asking the probe in a loop against a clock.
 */
export async function startupSettled(app: INestApplicationContext): Promise<void> {
  await Promise.all([app.get(TokenProvider).firstAttempt, app.get(LedgerStartup).opened]);
}
