// Opens a new store under umask 022 and, while it is still open, prints the mode of the database, its WAL
// and its shared-memory index: the first process's files as another user would find them.
import { statSync } from 'node:fs';
import { sqliteStore } from '../index.js';

const [path] = process.argv.slice(2) as [string];
process.umask(0o022);
const store = await sqliteStore({ path });
await store.append('umask-stream', [{ type: 'Written', data: { n: 1 } }], { expectedRevision: 'no_stream' });
const modes = Object.fromEntries(['', '-wal', '-shm'].map((suffix) => [suffix || 'db', (statSync(`${path}${suffix}`).mode & 0o777).toString(8)]));
process.stdout.write(`${JSON.stringify(modes)}\n`);
await store.close();
