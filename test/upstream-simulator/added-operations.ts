/**
 * Operations an operator adds to the gateway (docs/api.md §7) as the simulator answers them:
 * any inquiry path it is told of (`addedPaths`) takes any fields, and its answer's `data` echoes
 * the fields as sent (the gateway's normalised values) with a synthetic result. Everything
 * else (token, trackId rules, suppliers, credit) is the built-ins' path.
 */
export function addedOperationAnswer(body: Record<string, unknown>): Record<string, unknown> {
  const fields = Object.fromEntries(
    Object.entries(body).filter(([name]) => name !== 'trackId' && name !== 'requestHandlingType'),
  );
  return { ...fields, result: 'synthetic' };
}
