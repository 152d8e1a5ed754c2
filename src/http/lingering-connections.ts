import type { Server } from 'node:http';

/** How long a request still in flight when the server closes may take before its connection is cut. */
export const LINGER_GRACE_MS = 1_000;

/**
 * Closes what a server's close() would otherwise wait for: at once the idle keep-alive
 * connections, and after `graceMs` every connection still open, among them those that never
 * sent a request (a browser's spare connections, which Node counts as active and keeps until
 * their timeout: once 70 s of a shutdown). By the time a server closes, the shutdown sequence
 * has answered every inquiry and long-poll (shutdown-sequence.ts), so nothing owed is cut.
 */
export function closeLingeringConnections(server: Server, graceMs = LINGER_GRACE_MS): void {
  server.closeIdleConnections();
  setTimeout(() => server.closeAllConnections(), graceMs).unref();
}
