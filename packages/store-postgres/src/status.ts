import type { StoreStatus } from '@sessionfold/core/kernel';
import type { StoreContext } from './context.js';

/**
 * The feed's last position, the transactions holding the feed counter (each write takes it; a long-held one
 * stalls every writer) oldest first, and as `details` the schema's sizes and compaction's state: the streams
 * with a snapshot and the revisions their snapshots cover.
 */
export async function readStatus(ctx: StoreContext, following: boolean): Promise<StoreStatus> {
  ctx.live();
  const [found, [sizes]] = await Promise.all([
    ctx.rows<[number, number | null, number, string, number]>(ctx.q.status([])),
    ctx.rows<[number, number, number, number, number, number, number, number]>(ctx.q.details([])),
  ]);
  const holdingBack = found.filter((row) => row[1] !== null).map(([, pid, ageMs, state, waiting]) => ({ pid: pid as number, ageMs, state, waiting }));
  const [schemaVersion, eventsBytes, blobsBytes, totalBytes, streamsEstimate, eventsEstimate, compactedStreams, compactedEvents] = sizes ?? [
    0, 0, 0, 0, 0, 0, 0, 0,
  ];
  return {
    kind: 'postgres',
    lastPosition: found[0]?.[0] ?? 0,
    holdingBack,
    details: {
      schema: ctx.schema,
      schemaVersion,
      readOnly: ctx.config.readOnly,
      oldestHoldingPid: holdingBack[0]?.pid ?? null,
      // Table sizes with their indexes and TOAST; row counts are the planner's estimates (exact after ANALYZE).
      totalBytes,
      eventsBytes,
      blobsBytes,
      streamsEstimate,
      eventsEstimate,
      following,
      compactedStreams,
      compactedEvents,
    },
  };
}
