/**
 * Test-only, never part of the gateway: preloaded into a gateway process by
 * test/ledger-worker-crash.e2e.spec.ts (`NODE_OPTIONS=--import=<this file>`), which Node also
 * runs in every worker thread. In the embedded ledger's worker (the one given a `dataDir`), it
 * watches for the file named by VGW_TEST_LEDGER_WORKER_CRASH_FILE; when the test creates it, the
 * worker removes it and exits with code 70 (`process.exit` in a worker ends that thread only),
 * whatever it was doing: a crash of the thread, as an out-of-memory or a WebAssembly trap would be.
 * If the file is there already when a worker starts, that worker exits instead of sending its
 * first answer to a statement (PGlite open, the first migration under way), and removes the file.
 */
import process from 'node:process';
import { existsSync, rmSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';

const signal = process.env.VGW_TEST_LEDGER_WORKER_CRASH_FILE;
if (!isMainThread && signal && typeof workerData?.dataDir === 'string' && existsSync(signal)) {
  const post = parentPort.postMessage.bind(parentPort);
  // Each message is a list of replies (pglite-worker.ts); the opening's is id 0.
  parentPort.postMessage = (replies, ...rest) => {
    if (replies?.[0]?.id === 0) return post(replies, ...rest);
    rmSync(signal, { force: true });
    process.exit(70);
  };
} else if (!isMainThread && signal && typeof workerData?.dataDir === 'string') {
  const watcher = watch(dirname(signal), (_event, name) => {
    if (name !== basename(signal) || !existsSync(signal)) return;
    rmSync(signal, { force: true });
    process.exit(70);
  });
  // The worker lives by its port, not by this watch.
  watcher.unref();
}
