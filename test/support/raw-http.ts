import { connect } from 'node:net';

/** One exchange over a raw socket: for requests fetch cannot send (malformed, slow, oversized). */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  /** The server closed the connection (it always should after these errors). */
  closed: boolean;
  /** Milliseconds from the first byte sent to the connection's close. */
  elapsedMs: number;
}

/** Sends `chunks` (the later ones after `gapMs` each), reads until the server closes the connection. */
export function raw(port: number, chunks: string[], gapMs = 0, timeoutMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connection still open after ${timeoutMs} ms; received: ${text.slice(0, 200)}`));
    }, timeoutMs);
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => (text += data));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const [head = '', payload = ''] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(payload) as Record<string, unknown>;
      } catch {
        // not JSON: the assertions below say so
      }
      resolve({
        status: Number(statusLine?.split(' ')[1]),
        headers,
        body,
        closed: true,
        elapsedMs: Date.now() - started,
      });
    });
    socket.on('connect', () => {
      void (async () => {
        for (const [index, chunk] of chunks.entries()) {
          if (index > 0) await new Promise((r) => setTimeout(r, gapMs));
          if (socket.destroyed) return;
          socket.write(chunk);
        }
      })();
    });
  });
}
