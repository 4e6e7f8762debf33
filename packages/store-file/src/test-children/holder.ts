// Opens a store for writing (or read-only with `ro`), reports `open <pid>` or `locked <holderPid>`, then
// waits to be killed or for stdin to close.
import { StoreLockedError } from '@sessionfold/core/kernel';
import { fileStore } from '@sessionfold/store-file';

const [directory, mode] = process.argv.slice(2) as [string, string | undefined];
try {
  const store = await fileStore({ directory, readOnly: mode === 'ro' });
  process.stdout.write(`open ${process.pid}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => void store.close().then(() => process.exit(0)));
} catch (error) {
  if (error instanceof StoreLockedError) process.stdout.write(`locked ${error.holderPid}\n`);
  else process.stdout.write(`error ${String(error)}\n`);
  process.exit(0);
}
