import { readFileSync } from 'node:fs';
import type { Logger } from '@nestjs/common';
import { Counter, Gauge, type Registry } from 'prom-client';

export interface SecretFileWatcherOptions {
  /** The variable that named the file, e.g. `API_KEYS_FILE`: used in logs and metric labels. */
  variable: string;
  path: string;
  intervalMs: number;
  logger: Logger;
  registry?: Registry;
  /**
   * Applies new file content (trailing newline removed). Returns the problems that make it
   * unusable (named, never quoting the content); the previous value then stays in force.
   */
  apply(content: string): string[];
}

/**
 * Re-reads a mounted secret file while the gateway runs. Kubernetes updates Secret volumes
 * in place (an atomic swap of the `..data` symlink), so the file is polled: stat/inotify on
 * the path would miss the swap. A change is applied within one interval and logged by
 * variable name (never the value); an unusable file keeps the previous value, logs an error
 * and sets `vgw_secret_file_rejected{variable} 1` until a good file replaces it.
 */
export class SecretFileWatcher {
  private last: string | null;
  private timer: NodeJS.Timeout | null = null;
  private readonly rejected?: Gauge<'variable'>;
  private readonly reloads?: Counter<'variable' | 'outcome'>;

  constructor(private readonly options: SecretFileWatcherOptions) {
    this.last = this.read();
    const { registry } = options;
    if (registry) {
      this.rejected =
        (registry.getSingleMetric('vgw_secret_file_rejected') as Gauge<'variable'> | undefined) ??
        new Gauge({
          name: 'vgw_secret_file_rejected',
          help: 'Whether the latest content of a secret file was rejected (1: the previous value is still in use)',
          labelNames: ['variable'],
          registers: [registry],
        });
      this.reloads =
        (registry.getSingleMetric('vgw_secret_file_reloads_total') as Counter<'variable' | 'outcome'> | undefined) ??
        new Counter({
          name: 'vgw_secret_file_reloads_total',
          help: 'Changes of secret files seen while running, by outcome (applied or rejected)',
          labelNames: ['variable', 'outcome'],
          registers: [registry],
        });
      // Both series exist from start-up, so alerts see the first rejection (docs/operations.md, "Metrics").
      this.rejected.set({ variable: options.variable }, 0);
      for (const outcome of ['applied', 'rejected']) this.reloads.inc({ variable: options.variable, outcome }, 0);
    }
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.check(), this.options.intervalMs);
    // Never the reason a process stays alive.
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One poll: applies the file when its content changed. Public for the unit tests. */
  check(): void {
    const { variable, logger } = this.options;
    const content = this.read();
    if (content === null) {
      // Mid-swap or deleted: keep the current value and look again at the next poll.
      if (this.last !== null) logger.warn(`${variable}: the file cannot be read; keeping the previous value`);
      this.last = null;
      return;
    }
    if (content === this.last) return;
    this.last = content;
    const problems = this.options.apply(content.replace(/\r?\n$/, ''));
    if (problems.length > 0) {
      logger.error(`${variable}: the changed file was rejected (${problems.join('; ')}); keeping the previous value`);
      this.rejected?.set({ variable }, 1);
      this.reloads?.inc({ variable, outcome: 'rejected' });
      return;
    }
    logger.log(`${variable}: reloaded`);
    this.rejected?.set({ variable }, 0);
    this.reloads?.inc({ variable, outcome: 'applied' });
  }

  private read(): string | null {
    try {
      return readFileSync(this.options.path, 'utf8');
    } catch {
      return null;
    }
  }
}
