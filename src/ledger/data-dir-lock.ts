import { mkdirSync, rmSync, statSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

/** The lock's file name inside LEDGER_DATA_DIR. */
export const LOCK_NAME = 'gateway.lock';

function code(error: unknown): string {
  return (error as { code?: string }).code ?? 'error';
}

/** Whether a process listens on the unix socket `path` (false: no file, or a dead holder's). */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (error) => {
      if (code(error) === 'ECONNREFUSED' || code(error) === 'ENOENT') resolve(false);
      else reject(error);
    });
  });
}

function inode(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * One process per embedded ledger directory: PGlite has no lock of its own, and two processes
 * writing one directory corrupt it. The lock is a unix socket in the directory that its holder
 * listens on for its whole life. A newcomer connects to it: a live holder accepts (the
 * directory is in use: start fails, naming it); the file a dead holder left (SIGKILL, an
 * evicted pod) refuses the connection, and is replaced. A PID in a lock file could not tell:
 * in containers every gateway is PID 1, the dead one's PID included; a listening socket ends
 * with its process, whatever PID comes next. Tested with two real processes in
 * test/ledger-embedded.e2e.spec.ts.
 */
export class DataDirLock {
  private constructor(
    private readonly server: Server,
    readonly path: string,
  ) {}

  /** Creates `dir` if missing and takes its lock; errors name LEDGER_DATA_DIR and the directory. */
  static async take(dir: string): Promise<DataDirLock> {
    const path = join(dir, LOCK_NAME);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new Error(`LEDGER_DATA_DIR ${dir}: cannot create the directory (${code(error)})`, { cause: error });
    }
    const inUse = new Error(
      `LEDGER_DATA_DIR ${dir} is in use by another gateway process (its lock ${path} answers): one process per directory`,
    );
    for (let attempt = 0; ; attempt += 1) {
      // Connections are closed at once: the socket is only ever probed, never spoken to.
      const server = createServer((socket) => socket.destroy());
      try {
        await listen(server, path);
        // The lock never keeps the process alive by itself.
        server.unref();
        return new DataDirLock(server, path);
      } catch (error) {
        if (code(error) !== 'EADDRINUSE') {
          throw new Error(`LEDGER_DATA_DIR ${dir}: cannot take its lock ${path} (${code(error)})`, { cause: error });
        }
      }
      // A second EADDRINUSE: another newcomer replaced a dead holder's file first.
      if (attempt > 0) throw inUse;
      const probed = inode(path);
      if (await answers(path).catch(() => true)) throw inUse;
      // Left by a process that died. Removed only if it is still the file probed: two newcomers
      // after a crash cannot remove each other's live socket (but within the microseconds
      // between this stat and the unlink).
      if (inode(path) === probed) rmSync(path, { force: true });
    }
  }

  /** Stops listening: Node removes the socket file with it. */
  release(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
