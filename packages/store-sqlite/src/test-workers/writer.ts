// Appends without end on a few streams at once (so group commit is in play) and prints each acknowledged
// append; the test kills it with SIGKILL at a random moment.
import { sqliteStore } from '../index.js';

const [path, streamList, synchronous] = process.argv.slice(2) as [string, string, 'FULL' | 'NORMAL'];
const store = await sqliteStore({ path, synchronous });

async function lane(stream: string): Promise<never> {
  let revision = (await store.read(stream)).revision;
  for (;;) {
    const size = 1 + (revision % 3);
    const events = Array.from({ length: size }, (_, index) => ({ type: 'Written', data: { revision: revision + index + 1, pad: 'x'.repeat(64) } }));
    const result = await store.append(stream, events, { expectedRevision: revision === 0 ? 'no_stream' : revision });
    revision = result.revision;
    process.stdout.write(`${JSON.stringify({ stream, revision })}\n`);
  }
}

await Promise.all(streamList.split(',').map(lane));
