// Appends to one stream and compacts it over and over, so a SIGKILL lands at any point of a compaction.
// Event k carries { n: k }; the folded state is { count, sum }. Prints `ack <revision>` and `compacted <revision>`.
// An optional third argument paces the rounds (milliseconds between them), for a writer that others follow.
import { createInterface } from 'node:readline';
import { fileStore } from '@sessionfold/store-file';
import type { JsonValue } from '@sessionfold/core/kernel';

const [directory, stream, pause] = process.argv.slice(2) as [string, string, string | undefined];
const pauseMs = Number(pause ?? 0);
const lines = createInterface({ input: process.stdin });
await new Promise<void>((resolve) => lines.once('line', () => resolve()));

const store = await fileStore({ directory });
const read = await store.read(stream);
let state = (read.snapshot?.state as { count: number; sum: number } | undefined) ?? { count: 0, sum: 0 };
for await (const event of read.events) state = { count: state.count + 1, sum: state.sum + (event.data as { n: number }).n };
let revision = read.revision;
process.stdout.write(`open ${process.pid}\n`);

for (let round = 0; ; round++) {
  const size = 1 + (round % 3);
  const events = Array.from({ length: size }, (_, i) => ({ type: 'N', data: { n: revision + i + 1, pad: 'y'.repeat(64) } }));
  revision = (await store.append(stream, events, { expectedRevision: revision === 0 ? 'no_stream' : revision })).revision;
  for (const event of events) state = { count: state.count + 1, sum: state.sum + event.data.n };
  process.stdout.write(`ack ${revision}\n`);
  if (round % 2 === 1) {
    await store.compact(stream, { revision, state: state as unknown as JsonValue, identity: { stream, schemaVersion: 1 } });
    process.stdout.write(`compacted ${revision}\n`);
  }
  if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
}
