// Appends batches in a loop to a few streams from several concurrent workers and prints each acknowledged
// batch as `ack <stream> <worker> <batch> <size> <revision>`; event ids are `<pid>-<worker>-<batch>-<index>`. Waits for `go <directory> <streams> <workers>`
// on stdin before opening the store, so the next child can load while the previous one holds the lock.
import { createInterface } from 'node:readline';
import { fileStore } from '@sessionfold/store-file';

const lines = createInterface({ input: process.stdin });
const command = await new Promise<string>((resolve) => lines.once('line', resolve));
const [, directory, streamList, workerCount] = command.split(' ') as [string, string, string, string];
const streams = streamList.split(',');

const store = await fileStore({ directory });
process.stdout.write(`open ${process.pid}\n`);

const nonce = `${process.pid}`;
async function worker(w: number): Promise<never> {
  const stream = streams[w % streams.length] as string;
  for (let batch = 0; ; batch++) {
    const size = 1 + ((batch + w) % 4);
    const events = Array.from({ length: size }, (_, i) => ({
      type: 'Step',
      data: { run: nonce, w, batch, i, size, pad: 'x'.repeat((batch * 37) % 200) },
      eventId: `${nonce}-${w}-${batch}-${i}`,
    }));
    const { revision } = await store.append(stream, events, { expectedRevision: 'any' });
    process.stdout.write(`ack ${stream} ${w} ${batch} ${size} ${revision}\n`);
  }
}
await Promise.all(Array.from({ length: Number(workerCount) }, (_, w) => worker(w)));
