import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/**
 * The process of a server one test file owns (RedisServer, PostgresServer): killed as a crash
 * would, and started again on the same port by the subclass's `launch`.
 */
export abstract class ServerProcess {
  protected process: ChildProcess | null = null;

  get isRunning(): boolean {
    return this.process !== null;
  }

  /** Spawns the server and resolves once it accepts connections. */
  protected abstract launch(): Promise<void>;

  /** Hard kill, as a crash would: clients see their connections drop. */
  async kill(): Promise<void> {
    await this.end('SIGKILL');
  }

  /** Starts again on the same port, after a kill if it was running. */
  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
  }

  /** Sends `signal` to the running server and waits for it to exit; the process it ended, if one ran. */
  protected async end(signal: NodeJS.Signals): Promise<ChildProcess | null> {
    const child = this.process;
    if (!child) return null;
    this.process = null;
    const exited = once(child, 'exit');
    child.kill(signal);
    await exited;
    return child;
  }
}

/**
 * `start` again, at most 3 times, while it fails: a server handed a port by freePort exits at
 * once when the port was taken between freePort's close and its own bind (another spec file
 * starts servers meanwhile), so each try takes a fresh port. `start` rejects only once what it
 * spawned has exited, so nothing is left running; the last failure is thrown.
 */
export async function startOnFreshPorts<T>(start: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(attempt);
    } catch (error) {
      if (attempt >= 3) throw error;
    }
  }
}
