import { readdir, readFile } from 'node:fs/promises';

/** Clock ticks per second of /proc's utime and stime (USER_HZ: 100 on Linux's every usual build). */
const TICKS_PER_SECOND = 100;

/**
 * CPU µs of a process by thread kind, from /proc/<pid>/task/<tid>/stat (Linux; empty elsewhere):
 * `main` (the event loop), `WorkerThread` (worker_threads: the embedded ledger's PGlite),
 * `V8Worker` (V8's helpers: concurrent GC and compilation), the rest by their names. Read from
 * outside, so any build of the gateway can be split alike.
 */
export async function threadCpuUs(pid: number | undefined): Promise<Record<string, number>> {
  const byKind: Record<string, number> = {};
  if (pid === undefined || process.platform !== 'linux') return byKind;
  const tids = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  for (const tid of tids) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    const close = stat.lastIndexOf(')');
    if (close < 0) continue;
    const name = tid === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, close);
    // After "pid (comm) ": state is field 3, utime 14, stime 15.
    const fields = stat.slice(close + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    byKind[name] = (byKind[name] ?? 0) + (ticks * 1_000_000) / TICKS_PER_SECOND;
  }
  return byKind;
}

/** What each kind of thread spent between two readings (kinds that spent nothing left out). */
export function threadCpuSince(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const spent: Record<string, number> = {};
  for (const [kind, us] of Object.entries(after)) {
    const delta = us - (before[kind] ?? 0);
    if (delta > 0) spent[kind] = delta;
  }
  return spent;
}
