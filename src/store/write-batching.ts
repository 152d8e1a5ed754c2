import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';

/**
 * Sends every Redis command issued in one turn of the event loop in one socket write.
 *
 * Each inquiry sends two `SET`s, and each went out in its own `write`: a system call, plus the
 * kernel's work of waking Redis, about 12 % of the gateway's CPU under load (an on-CPU profile,
 * docs/decisions/0002-redis-write-batching.md). Requests that arrive together are handled in the same poll phase of
 * the event loop, so their commands are issued within microseconds of each other. The first
 * command of a turn corks the socket and a `setImmediate` uncorks it, right after the poll
 * phase: Node then hands every buffered command to the kernel in one `writev`. Measured side by
 * side with the build before: −13 % CPU per inquiry, and Redis reads 0.18 batches per inquiry
 * instead of 1.83. A lone request (one connection) gains nothing and waits less than one turn.
 *
 * Only the write is delayed; ioredis's reply queue, timeouts and error handling see exactly the
 * commands and order they saw before. ioredis's own `enableAutoPipelining` batches by
 * `process.nextTick` instead, which runs after every single I/O callback and so almost never
 * finds two inquiries' commands together (measured: ±0 µs), and it is off for a crash it can
 * cause (redis-connection.ts).
 */
export function batchWritesPerLoopTurn(client: Redis): void {
  const send = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
  let corked: Socket | null = null;
  const uncork = () => {
    const socket = corked;
    corked = null;
    socket?.uncork();
  };
  (client as { sendCommand: unknown }).sendCommand = (command: unknown, stream?: unknown) => {
    // Commands written to a given stream (pipelines, MULTI) and commands while the connection is
    // not ready (handshake, offline) take ioredis's own path unchanged.
    if (corked === null && stream === undefined && client.status === 'ready') {
      const socket = client.stream as Socket | undefined;
      if (socket?.writable) {
        socket.cork();
        corked = socket;
        setImmediate(uncork);
      }
    }
    return send(command, stream);
  };
}
