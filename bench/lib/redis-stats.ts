/**
 * What the benchmark's own redis-server did during a run: commands by name (INFO commandstats,
 * commands run inside Lua scripts included) and read events (INFO stats total_reads_processed:
 * one per batch of bytes read from a client socket, so a round trip — a pipeline is one), and,
 * for a short sample, the commands as MONITOR sees them: sent by a client or run by a script.
 */
import { once } from 'node:events';
import net from 'node:net';
import { Redis } from 'ioredis';

const MONITOR_END = 'bench-monitor-end';

export interface RedisCounters {
  commands: Record<string, number>;
  readEvents: number;
}

export interface RedisDelta {
  /** Per inquiry: commands by name, their total, and read events (≈ round trips). */
  commandsPerInquiry: Record<string, number>;
  totalCommandsPerInquiry: number;
  readEventsPerInquiry: number;
}

export async function readCounters(client: Redis): Promise<RedisCounters> {
  const [commandstats, stats] = await Promise.all([client.info('commandstats'), client.info('stats')]);
  const commands: Record<string, number> = {};
  for (const match of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) commands[match[1]] = Number(match[2]);
  const reads = /^total_reads_processed:(\d+)/m.exec(stats);
  return { commands, readEvents: reads ? Number(reads[1]) : NaN };
}

/**
 * Per inquiry between two readings. The bench's own INFO calls (2 per reading, 1 read event each)
 * are taken out.
 */
export function perInquiry(before: RedisCounters, after: RedisCounters, inquiries: number): RedisDelta {
  const commandsPerInquiry: Record<string, number> = {};
  let total = 0;
  for (const [name, calls] of Object.entries(after.commands)) {
    let delta = calls - (before.commands[name] ?? 0);
    if (name === 'info') delta -= 2;
    if (delta <= 0) continue;
    commandsPerInquiry[name] = delta / inquiries;
    total += delta;
  }
  return {
    commandsPerInquiry,
    totalCommandsPerInquiry: total / inquiries,
    readEventsPerInquiry: (after.readEvents - before.readEvents - 2) / inquiries,
  };
}

export interface MonitorSample {
  inquiries: number;
  /** Commands per inquiry sent by clients (the round-trip count, before pipelining). */
  clientCommandsPerInquiry: Record<string, number>;
  /** Commands per inquiry run inside Lua scripts (no round trip of their own). */
  scriptCommandsPerInquiry: Record<string, number>;
}

/**
 * Runs `work` (which makes `inquiries` inquiries) with a MONITOR connection attached, and sorts
 * the commands seen into those sent by clients and those run by scripts. Commands of the
 * bench's own connections are not counted.
 */
export async function monitorSample(
  redisUrl: string,
  inquiries: number,
  work: () => Promise<void>,
): Promise<MonitorSample> {
  // A raw connection: MONITOR's stream of status lines is simple to read, and ioredis's monitor
  // mode trips over replies that race its ready check.
  const { hostname, port } = new URL(redisUrl);
  const socket = net.connect(Number(port), hostname);
  await once(socket, 'connect');
  const client: Record<string, number> = {};
  const script: Record<string, number> = {};
  let ended: () => void = () => undefined;
  const endSeen = new Promise<void>((resolve) => (ended = resolve));
  let pending = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    pending += chunk;
    const lines = pending.split('\r\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      // +1700000000.123456 [0 127.0.0.1:54321] "set" "key" ...   or   [0 lua] for scripts
      const match = /^\+[\d.]+ \[\d+ ([^\]]+)\] "([^"]+)"(?: "([^"]*)")?/.exec(line);
      if (!match) continue;
      const name = match[2].toLowerCase();
      if (name === 'echo' && match[3] === MONITOR_END) {
        ended();
        continue;
      }
      const bucket = match[1] === 'lua' ? script : client;
      bucket[name] = (bucket[name] ?? 0) + 1;
    }
  });
  socket.write('MONITOR\r\n');
  try {
    await work();
    // MONITOR lines arrive asynchronously: an ECHO of our own marks the end.
    const marker = new Redis(redisUrl);
    await marker.echo(MONITOR_END);
    marker.disconnect();
    await endSeen;
  } finally {
    socket.destroy();
  }
  const per = (counts: Record<string, number>) =>
    Object.fromEntries(Object.entries(counts).map(([name, n]) => [name, n / inquiries]));
  return { inquiries, clientCommandsPerInquiry: per(client), scriptCommandsPerInquiry: per(script) };
}
