import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';

/** Flips when shutdown begins, so readiness fails first and traffic drains away. */
@Injectable()
export class ShutdownState implements BeforeApplicationShutdown {
  private shuttingDown = false;

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  beforeApplicationShutdown(): void {
    this.shuttingDown = true;
  }
}
