// Appends `count` single-event batches to one stream, one every few milliseconds, then exits: the writer
// another process follows.
import { sqliteStore } from '../index.js';

const [path, stream, count] = process.argv.slice(2) as [string, string, string];
const store = await sqliteStore({ path });
let revision = (await store.read(stream)).revision;
for (let n = 0; n < Number(count); n++) {
  revision = (await store.append(stream, [{ type: 'Appended', data: { n } }], { expectedRevision: revision === 0 ? 'no_stream' : revision })).revision;
  await new Promise((resolve) => setTimeout(resolve, 3));
}
await store.close();
