import { CorruptionError, type EventStore } from '@sessionfold/core/kernel';
import type { Progress } from '../progress.js';
import type { Findings } from './problems.js';

/**
 * Reads everything through the port — every stream, the whole change feed, every owned blob (each verified
 * against its sha256 by `getBlob`) — and records what fails, naming the file or table and record the store
 * named. Each part goes on after another part failed, so one damaged stream does not hide the others.
 */
export async function scanThroughPort(store: EventStore, where: string, findings: Findings, bar: Progress): Promise<void> {
  const streams: string[] = [];
  await attempt(findings, where, 'the list of streams', async () => {
    for await (const { stream } of store.streams()) streams.push(stream);
  });
  bar.total(streams.length + 1);
  findings.streams += streams.length;
  for (const stream of streams) {
    await attempt(findings, where, `the events of stream ${stream}`, async () => {
      const read = await store.read(stream);
      let revision = read.snapshot?.revision ?? 0;
      for await (const event of read.events) {
        findings.records++;
        if (event.revision !== revision + 1)
          throw new CorruptionError(`stream ${stream}`, event.revision, `revision ${event.revision} follows revision ${revision}`);
        revision = event.revision;
      }
    });
    await attempt(findings, where, `the blobs of stream ${stream}`, async () => {
      for await (const sha of store.blobs(stream)) {
        findings.blobs++;
        const bytes = await store.getBlob(sha);
        if (bytes === undefined) findings.error(`stream ${stream}`, undefined, `blob ${sha} is owned but missing`);
      }
    });
    bar.tick();
  }
  await attempt(findings, where, 'the change feed', async () => {
    let position = 0;
    for await (const change of store.readAll()) {
      if (change.position <= position) throw new CorruptionError('change feed', change.position, `position ${change.position} does not follow ${position}`);
      position = change.position;
    }
  });
  bar.tick();
}

/** Runs one part of the scan; a failure becomes a problem naming where the store said, or `where` and `what`. */
async function attempt(findings: Findings, where: string, what: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    if (error instanceof CorruptionError) findings.error(error.file, error.line, error.message);
    else findings.error(where, undefined, `${what}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
