import { relative } from 'node:path';
import Sequencer from '@jest/test-sequencer';

/**
 * Seconds each of the slowest spec files took in a full quiet run (2 workers, 2 cores). Jest runs
 * the files it has timings for slowest first, and the rest after them by size; a fresh machine
 * (CI) has no timings, so a 45 s file small in bytes started near the end and one worker ran on
 * alone. These figures stand in for the missing timings; a machine's own cache wins. They need
 * not be exact, only in roughly the right order: re-measure when a file's time changes a lot.
 */
const SECONDS = {
  'test/soak.e2e.spec.ts': 80,
  'test/image.integration.spec.ts': 60,
  'test/ledger-worker-crash.e2e.spec.ts': 45,
  'test/tracking.e2e.spec.ts': 39,
  'test/join-edges.e2e.spec.ts': 30,
  'test/faults-under-load.e2e.spec.ts': 30,
  'test/ledger-replica-death.e2e.spec.ts': 28,
  'test/ledger-admin.e2e.spec.ts': 25,
  'test/console.e2e.spec.ts': 23,
  'test/sandbox-script.e2e.spec.ts': 20,
  'test/async-inquiries.e2e.spec.ts': 19,
  'test/webhooks.e2e.spec.ts': 18,
  'test/contract.e2e.spec.ts': 18,
  'test/reuse-path.e2e.spec.ts': 18,
  'test/helm-production.integration.spec.ts': 18,
  'test/ledger-embedded.e2e.spec.ts': 17,
  'test/redis-failover.e2e.spec.ts': 16,
};

export default class SlowestFirstSequencer extends Sequencer {
  /** Milliseconds: the cached timing, else the figure above, else none. */
  time(test) {
    const known = SECONDS[relative(test.context.config.rootDir, test.path)];
    return super.time(test) ?? (known === undefined ? undefined : known * 1000);
  }

  /**
   * Failed last time first, then the longest known; files with no timing after those (Jest's own
   * order puts them first, guessing they are new), the largest first.
   */
  sort(tests) {
    const sized = super.sort(tests); // sets each test's duration; untimed ones by size
    const rank = new Map(sized.map((test, index) => [test, index]));
    return [...sized].sort(
      (a, b) =>
        Number(this.hasFailed(b)) - Number(this.hasFailed(a)) ||
        (b.duration ?? -1) - (a.duration ?? -1) ||
        rank.get(a) - rank.get(b),
    );
  }
}
