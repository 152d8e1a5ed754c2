import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { LedgerStartup } from '../ledger/ledger-startup.js';

const MESSAGES = {
  opening: 'the embedded ledger is opening',
  failed: 'the embedded ledger could not be opened',
  recovering: "the embedded ledger's worker died; a new one is being started",
} as const;

/**
 * Readiness and startup wait for the embedded ledger to be open and migrated (ledger-startup.ts),
 * and readiness for a new worker after its worker died.
 * No check with a server: its outages do not stop inquiries (their entries wait in the queue).
 */
@Injectable()
export class LedgerHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly startup: LedgerStartup,
  ) {}

  /** The check to add to a probe's list: none with a server. */
  checks<const Key extends string>(key: Key): Array<() => ReturnType<typeof this.isHealthy<Key>>> {
    return this.startup.embedded ? [() => this.isHealthy(key)] : [];
  }

  isHealthy<const Key extends string>(key: Key) {
    const session = this.indicators.check(key);
    const state = this.startup.state;
    if (state.phase === 'ready') return session.up();
    return session.down({ message: MESSAGES[state.phase] });
  }
}
