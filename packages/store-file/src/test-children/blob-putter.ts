// Stores blobs of varied sizes for a few streams in a loop and prints each acknowledged one as
// `ack <stream> <sha256>`. Waits for `go <directory> <streams>` on stdin before opening the store, so the next
// child can load while the previous one holds the lock.
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileStore } from '@sessionfold/store-file';

const lines = createInterface({ input: process.stdin });
const command = await new Promise<string>((resolve) => lines.once('line', resolve));
const [, directory, streamList] = command.split(' ') as [string, string, string];
const streams = streamList.split(',');

const store = await fileStore({ directory });
process.stdout.write(`open ${process.pid}\n`);
for (let n = 0; ; n++) {
  const stream = streams[n % streams.length] as string;
  const sha = await store.putBlob(stream, randomBytes(1 + ((n * 7919) % 65_536)));
  process.stdout.write(`ack ${stream} ${sha}\n`);
}
