import { rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Command } from 'commander';
import type { EventStore, StoredEvent } from '@sessionfold/core/kernel';
import { forEachItem } from '@sessionfold/core/store-kit';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { createOutputFile, refuseExisting } from '../files.js';
import { examples } from '../help.js';
import { JsonStrings } from '../format-change.js';
import { Output } from '../output.js';
import { parseArg } from '../parse.js';
import { PORTABLE_FORMAT, PORTABLE_VERSION, type PortableLine } from '../portable.js';
import { interruptible } from '../interruption.js';
import { lookahead } from '../lookahead.js';
import { progress } from '../progress.js';

/**
 * `export [--out FILE]`: the whole store as one portable JSON-lines file (streams, snapshots, events, blobs in
 * base64), streamed: nothing but the current event or blob is held in memory.
 */
export function registerExport(program: Command): void {
  program
    .command('export')
    .description('write the whole store as one portable JSON-lines file: streams, snapshots, events, blobs (base64)')
    .option('-o, --out <file>', 'write to this file (created; never overwritten) instead of stdout')
    .addHelpText(
      'after',
      examples('sessionfold export -s file:./data --out backup.jsonl', 'sessionfold export -s sqlite:./sessions.db | gzip > backup.jsonl.gz') +
        '\n\nPositions and recordedAt are not exported: a store the file is imported into gives its own.',
    )
    .action(async (rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const { out: file } = parseArg(z.object({ out: z.string().min(1).optional() }), rawOptions, '--out');
      // Before the store is opened: the answer does not depend on it.
      if (file !== undefined) refuseExisting(file);
      await interruptible((interruption) =>
        withStore(context, 'read', async ({ store }) => {
          const fileStream = file === undefined ? undefined : await createOutputFile(file);
          const target = fileStream ? new Output({ json: true, quiet: true, stdout: fileStream }) : context.out;
          const write = (line: PortableLine) => target.line(line);
          // Counting the streams is a read of the stream list: done only when a bar shows the total.
          let total = 0;
          if (context.out.progressAllowed) for await (const _ of store.streams()) total++;
          const bar = progress(context.out, 'export', total);
          const counts = { streams: 0, events: 0, blobs: 0 };
          const strings = new JsonStrings();
          let complete = false;
          // Ended at the deadline, the export is as unfinished as one stopped between streams.
          if (file !== undefined) interruption.onForcedEnd(() => complete || rmSync(file, { force: true }));
          // The next stream's read and blob list are asked for while this one is written.
          const streams = lookahead(store.streams(), async ({ stream }) => {
            const [read, blobs] = await Promise.all([store.readStored(stream), blobsOf(store, stream)]);
            return { stream, read, blobs };
          });
          try {
            await write({ kind: 'header', format: PORTABLE_FORMAT, version: PORTABLE_VERSION, exportedAt: new Date().toISOString() });
            for await (const { stream, read, blobs } of streams) {
              await interruption.between(
                `${counts.streams} stream(s); ${file === undefined ? 'the output has no end line, so an import refuses it' : `the unfinished ${file} was removed`}`,
                'Try: sessionfold export again',
              );
              if (read.revision === 0) continue;
              counts.streams++;
              await write({ kind: 'stream', stream, revision: read.revision });
              if (read.snapshot) await write({ kind: 'snapshot', stream, snapshot: read.snapshot });
              const streamJson = JSON.stringify(stream);
              await forEachItem(read.events, (event) => {
                counts.events++;
                return target.append(portableEventLine(streamJson, event, strings)) ? target.flush() : undefined;
              });
              for (const sha256 of blobs) {
                const bytes = await store.getBlob(sha256);
                if (bytes === undefined) continue;
                counts.blobs++;
                await write({ kind: 'blob', stream, sha256, base64: Buffer.from(bytes).toString('base64') });
              }
              bar.tick();
            }
            await write({ kind: 'end', ...counts });
            complete = true;
          } finally {
            bar.stop();
            await target.flush();
            if (fileStream) await new Promise<void>((resolve, reject) => fileStream.end((error?: Error | null) => (error ? reject(error) : resolve())));
            // An export cut short is of no use (an import refuses it): a file this command created goes too.
            if (file !== undefined && !complete && interruption.requested) await rm(file, { force: true });
          }
          if (file !== undefined) {
            if (context.out.json) await context.out.document({ file, ...counts });
            else await context.out.text(`exported ${counts.streams} stream(s), ${counts.events} event(s), ${counts.blobs} blob(s) to ${file}`);
          } else {
            context.out.log(`exported ${counts.streams} stream(s), ${counts.events} event(s), ${counts.blobs} blob(s)`);
          }
        }),
      );
    });
}

/** The sha256 of each blob `stream` owns: a short list, held so that the next stream's reads can start early. */
async function blobsOf(store: EventStore, stream: string): Promise<string[]> {
  const shas: string[] = [];
  for await (const sha256 of store.blobs(stream)) shas.push(sha256);
  return shas;
}

/**
 * The portable `event` line of `event` (of the stream whose JSON string is `streamJson`), as `JSON.stringify` of a
 * `PortableLine` gives it, with the data's stored text copied rather than parsed and serialized again.
 */
function portableEventLine(streamJson: string, event: StoredEvent, strings: JsonStrings): string {
  const eventId = event.eventId === undefined ? '' : `,"eventId":${JSON.stringify(event.eventId)}`;
  const schemaVersion = event.schemaVersion === 1 ? '' : `,"schemaVersion":${event.schemaVersion}`;
  return `{"kind":"event","stream":${streamJson},"revision":${event.revision},"type":${strings.type(event.type)},"data":${event.dataJson}${eventId}${schemaVersion}}\n`;
}
