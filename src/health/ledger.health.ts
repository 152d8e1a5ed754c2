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
 * and readiness for a new worker after its worker died. Startup does not: once it has said 200,
 * the start-up has finished (contract §4, "200 once … has finished"; test/ledger-worker-crash.e2e.spec.ts).
 * No check with a server: its outages do not stop inquiries (their entries wait in the queue).
 */
@Injectable()
export class LedgerHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly startup: LedgerStartup,
  ) {}

  /** The check to add to a probe's list: none with a server. */
  checks<const Key extends string>(
    key: Key,
    probe: 'ready' | 'startup',
  ): Array<() => ReturnType<typeof this.isHealthy<Key>>> {
    return this.startup.embedded ? [() => this.isHealthy(key, probe)] : [];
  }

  isHealthy<const Key extends string>(key: Key, probe: 'ready' | 'startup') {
    const session = this.indicators.check(key);
    const state = this.startup.state;
    if (state.phase === 'ready' || (state.phase === 'recovering' && probe === 'startup')) return session.up();
    return session.down({ message: MESSAGES[state.phase] });
  }
}
