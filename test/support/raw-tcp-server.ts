import { once } from 'node:events';
import net from 'node:net';

/**
 * A raw node:net server on a free loopback port, for what an HTTP server would hide: every byte,
 * connection and close is counted. `onConnection` plays the server's part on each socket; its
 * `data` listeners run after the byte count. `close()` destroys the open sockets first.
 */
export async function rawTcpServer(onConnection: (socket: net.Socket) => void) {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  let closed = 0;
  let bytes = 0;
  const closeWaiters: Array<{ count: number; resolve: () => void }> = [];
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
    socket.on('close', () => {
      sockets.delete(socket);
      closed++;
      for (const waiter of closeWaiters.filter((w) => closed >= w.count)) {
        closeWaiters.splice(closeWaiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    connections: () => connections,
    closed: () => closed,
    /** Resolves once `count` connections have closed (at once if they have). */
    untilClosed: (count: number) =>
      new Promise<void>((resolve) => (closed >= count ? resolve() : closeWaiters.push({ count, resolve }))),
    bytes: () => bytes,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
