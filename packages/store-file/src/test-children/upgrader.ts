// Upgrades the legacy store in the directory given, once `go` arrives on stdin (so a pool can start it early).
// With SESSIONFOLD_KILL_AFTER_STEP=N it SIGKILLs itself right after its N-th file-system call that changes
// something (create, write, sync, rename, unlink, mkdir, truncate). Prints `ready`, then `done <steps>`.
import { createInterface } from 'node:readline';
import { nodeFileSystem, type FileSystem } from '../fs-layer.js';
import { legacyLogLines } from '../legacy/legacy-log.js';
import { upgradeLegacyStore } from '../legacy/upgrade.js';

const [directory] = process.argv.slice(2) as [string];
const killAfter = Number(process.env['SESSIONFOLD_KILL_AFTER_STEP'] ?? 0);
let steps = 0;
const step = <T>(result: T): T => {
  if (++steps === killAfter) process.kill(process.pid, 'SIGKILL');
  return result;
};
const CREATES = new Set(['w', 'wx', 'w+', 'wx+', 'a', 'a+']);
const fsl: FileSystem = {
  ...nodeFileSystem,
  open: async (path, flags, mode) => {
    const fd = await nodeFileSystem.open(path, flags, mode);
    return CREATES.has(flags) ? step(fd) : fd;
  },
  write: async (...args) => step(await nodeFileSystem.write(...args)),
  fdatasync: async (fd) => step(await nodeFileSystem.fdatasync(fd)),
  fsync: async (fd) => step(await nodeFileSystem.fsync(fd)),
  rename: async (from, to) => step(await nodeFileSystem.rename(from, to)),
  unlink: async (path) => step(await nodeFileSystem.unlink(path)),
  mkdir: async (path, mode) => step(await nodeFileSystem.mkdir(path, mode)),
  ftruncate: async (fd, length) => step(await nodeFileSystem.ftruncate(fd, length)),
};

const lines = createInterface({ input: process.stdin });
// A read first (it changes nothing), so code loading and warming up do not use up the parent's random delay.
await legacyLogLines(nodeFileSystem, directory);
process.stdout.write('ready\n');
await new Promise<void>((resolve) => lines.once('line', () => resolve()));
await upgradeLegacyStore(fsl, directory);
process.stdout.write(`done ${steps}\n`);
process.exit(0);
