import {
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationShutdown,
  type Type,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ShutdownState } from '../health/shutdown.state.js';
import { InquiryWaits } from '../inquiry/inquiry-waits.js';
import { RunningInquiries } from '../inquiry/running-inquiries.js';
import { Settlements } from '../inquiry/settlements.js';
import { LedgerDrainer } from '../ledger/ledger-drainer.js';
import { RefusalFlusher } from '../ledger/refusal-flusher.js';
import { RedisConnection } from '../store/redis-connection.js';
import { TokenProvider } from '../token/token.provider.js';
import { UpstreamClient } from '../upstream/upstream.client.js';
import { WebhookDispatcher } from '../webhooks/webhook-dispatcher.js';

/** One step: a name for the log, and what it does with the providers it looks up. */
export interface ShutdownStep {
  name: string;
  run(get: <T>(type: Type<T>) => T): unknown;
}

/**
 * While the HTTP server still answers (docs/behaviour.md, "Shutdown"), in this order: readiness
 * turns 503 and every answer closes its connection; new inquiries are refused (503, nothing
 * sent); held long-polls are answered at once; then every inquiry already taken (answered or
 * 202) is waited for, including any that arrived meanwhile, until none is left.
 */
export const WHILE_SERVING: readonly ShutdownStep[] = [
  { name: 'not ready', run: (get) => get(ShutdownState).begin() },
  { name: 'stop accepting inquiries', run: (get) => get(RunningInquiries).stopAccepting() },
  { name: 'release held long-polls', run: (get) => get(InquiryWaits).releaseAll() },
  { name: 'drain inquiries', run: (get) => get(RunningInquiries).drain() },
];

/**
 * After Nest has closed the HTTP server (it does so between the two lists): what the drained
 * inquiries still owe the store, then the pools. A step that must write to Redis goes before
 * 'close Redis' (one line here, its provider looked up by class).
 */
export const AFTER_SERVER_CLOSED: readonly ShutdownStep[] = [
  { name: 'flush owed settlements', run: (get) => get(Settlements).flushOwed() },
  // Before the ledger's database closes: attempts in flight end (10 s at most) and record their outcome.
  { name: 'stop webhook deliveries', run: (get) => get(WebhookDispatcher).stop() },
  // Before the ledger's database closes (the drainer's stop closes it): this replica's refusal
  // counts, for at most 5 s (src/ledger/refusal-flusher.spec.ts, "stop() ends within a bound").
  { name: 'flush refusal counts', run: (get) => get(RefusalFlusher).stop() },
  // After the settlements (they put the last entries on the queue), before Redis closes: what
  // is queued is written to PostgreSQL for a few seconds; the rest waits for another replica.
  { name: 'flush the ledger queue', run: (get) => get(LedgerDrainer).stop() },
  { name: 'stop token renewal', run: (get) => get(TokenProvider).stop() },
  { name: 'close the upstream pool', run: (get) => get(UpstreamClient).close() },
  { name: 'close Redis', run: (get) => get(RedisConnection).close() },
];

/**
 * The gateway's one shutdown sequence (SIGTERM, or `app.close()`): the steps above, in the
 * order listed, whatever order Nest visits the modules in. No other provider has a shutdown
 * hook: Nest runs those module by module, which once let the drain start before readiness
 * turned 503. Each step is logged with its duration; a failing step is logged and the next
 * one runs, so the pools are closed whatever happened before.
 */
@Injectable()
export class ShutdownSequence implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Shutdown');

  constructor(private readonly modules: ModuleRef) {}

  async beforeApplicationShutdown(): Promise<void> {
    await this.run(WHILE_SERVING);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.run(AFTER_SERVER_CLOSED);
  }

  private async run(steps: readonly ShutdownStep[]): Promise<void> {
    const get = <T>(type: Type<T>): T => this.modules.get(type, { strict: false });
    for (const step of steps) {
      const started = performance.now();
      try {
        await step.run(get);
        this.logger.log(`step: ${step.name} (${Math.round(performance.now() - started)} ms)`);
      } catch (error) {
        this.logger.error(`step failed: ${step.name}: ${error instanceof Error ? error.name : 'unknown error'}`);
      }
    }
  }
}
