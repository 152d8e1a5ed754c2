import { Injectable } from '@nestjs/common';

/**
 * Flips when shutdown begins, so readiness fails first and traffic drains away. Flipped by the
 * shutdown sequence's first step (src/http/shutdown-sequence.ts), not by a Nest hook of its own:
 * the order of the steps must not depend on the order Nest visits the modules.
 */
@Injectable()
export class ShutdownState {
  private shuttingDown = false;

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  begin(): void {
    this.shuttingDown = true;
  }
}
