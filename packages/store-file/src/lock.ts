import { CorruptionError, StorageError, StoreLockedError } from '@sessionfold/core/kernel';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { errorCode, listDir, unlinkIfPresent, writeAll, type FileSystem } from './fs-layer.js';

/** The exclusive writer lock of a store directory; `release` removes it only if it is still ours. */
export interface WriterLock {
  readonly path: string;
  release(): Promise<void>;
}

interface LockContent {
  pid: number;
  token: string;
}

/**
 * Takes `<directory>/LOCK`. The lock file is written and fsynced under a temporary name and then hard-linked
 * into place, so a LOCK never exists without its holder's pid. A lock whose pid is dead is taken over by
 * renaming it to a name of our own first and checking that what we moved is the stale lock we inspected;
 * of two processes taking over at once, only one can move it. One that moved a live lock (taken since it
 * looked) puts it back; a writer that linked its own lock while a live one was moved aside finds the mover's
 * claim naming a live holder and gives its lock up, so the put-back succeeds and there is never a second
 * writer. A live holder gives `StoreLockedError`.
 */
export async function acquireLock(fsl: FileSystem, directory: string): Promise<WriterLock> {
  const path = join(directory, 'LOCK');
  const token = randomBytes(8).toString('hex');
  const mine: LockContent = { pid: process.pid, token };
  const temp = join(directory, `.LOCK.${process.pid}.${token}.tmp`);
  await writeLockFile(fsl, temp, mine);
  try {
    for (let attempt = 0; attempt < 8; attempt++) {
      try {
        // No directory fsync: a LOCK name lost in a crash was held by a process that is gone anyway.
        await fsl.link(temp, path);
        const displaced = await displacedLiveHolder(fsl, directory, token);
        if (displaced !== undefined) {
          await releaseLock(fsl, path, token);
          throw new StoreLockedError(path, displaced);
        }
        await removeDeadLockTemporaries(fsl, directory);
        return { path, release: () => releaseLock(fsl, path, token) };
      } catch (error) {
        if (error instanceof StoreLockedError) throw error;
        if (errorCode(error) !== 'EEXIST') throw new StorageError(`Could not create ${path}.`, { cause: error });
      }
      const holder = await readLock(fsl, path);
      if (holder === 'missing') continue;
      if (holder === undefined) throw unreadableLock(path);
      if (isAlive(holder.pid)) throw new StoreLockedError(path, holder.pid);
      const claim = join(directory, `.LOCK.stale.${process.pid}.${token}`);
      try {
        await fsl.rename(path, claim);
      } catch (error) {
        if (errorCode(error) === 'ENOENT') continue;
        throw new StorageError(`Could not take over the stale lock ${path}.`, { cause: error });
      }
      const moved = await readLock(fsl, claim);
      if (typeof moved === 'object' && moved.token === holder.token) {
        await unlinkIfPresent(fsl, claim);
        continue;
      }
      // We moved a lock someone took in the meantime: put it back and step aside. A writer that linked its own
      // lock meanwhile sees our claim and gives its lock up: until then the name is taken, so try again.
      for (let tries = 0; tries < PUT_BACK_TRIES; tries++) {
        const back = await fsl.link(claim, path).then(
          () => true,
          (error: unknown) => errorCode(error) !== 'EEXIST',
        );
        if (back) break;
        await new Promise((resolve) => setTimeout(resolve, PUT_BACK_WAIT_MS));
      }
      await unlinkIfPresent(fsl, claim);
      throw new StoreLockedError(path, typeof moved === 'object' ? moved.pid : undefined);
    }
    throw new StoreLockedError(path, undefined);
  } finally {
    await unlinkIfPresent(fsl, temp).catch(() => undefined);
  }
}

/** A put-back waits this many times this long for a lock linked while it was moved aside to be given up. */
const PUT_BACK_TRIES = 200;
const PUT_BACK_WAIT_MS = 5;

/** The pid of a live holder whose lock another process has moved aside (`.LOCK.stale.*` holding it), if any. */
async function displacedLiveHolder(fsl: FileSystem, directory: string, token: string): Promise<number | undefined> {
  for (const name of await listDir(fsl, directory)) {
    if (!name.startsWith('.LOCK.stale.')) continue;
    const moved = await readLock(fsl, join(directory, name));
    if (typeof moved === 'object' && moved.token !== token && isAlive(moved.pid)) return moved.pid;
  }
  return undefined;
}

/**
 * A LOCK that names no holder (empty, or not written by a sessionfold writer, which only ever links a complete
 * lock into place): whether some writer holds it cannot be told, so it is neither taken over nor reported as held.
 */
function unreadableLock(path: string): CorruptionError {
  return new CorruptionError(
    path,
    undefined,
    'the writer lock is empty or not one a sessionfold writer made, so who holds it is unknown; ' +
      'if no writer is running on this directory, remove it and open the store again',
  );
}

/** Lock files of processes killed while taking or taking over the lock; a live process's are left alone. */
async function removeDeadLockTemporaries(fsl: FileSystem, directory: string): Promise<void> {
  for (const name of await listDir(fsl, directory)) {
    const match = /^\.LOCK\.(?:stale\.)?(\d+)\.[0-9a-f]+(?:\.tmp)?$/.exec(name);
    if (!match || Number(match[1]) === process.pid || isAlive(Number(match[1]))) continue;
    await unlinkIfPresent(fsl, join(directory, name)).catch(() => undefined);
  }
}

async function writeLockFile(fsl: FileSystem, path: string, content: LockContent): Promise<void> {
  const fd = await fsl.open(path, 'wx', 0o600);
  try {
    await writeAll(fsl, fd, Buffer.from(`${JSON.stringify(content)}\n`), 0);
    await fsl.fsync(fd);
  } finally {
    await fsl.close(fd);
  }
}

/** The lock's content; `'missing'` when there is no file, undefined when it cannot be read as a lock. */
async function readLock(fsl: FileSystem, path: string): Promise<LockContent | 'missing' | undefined> {
  let text: string;
  try {
    text = (await fsl.readFile(path)).toString('utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return 'missing';
    throw new StorageError(`Could not read ${path}.`, { cause: error });
  }
  try {
    const value = JSON.parse(text) as Partial<LockContent>;
    if (Number.isSafeInteger(value.pid) && typeof value.token === 'string') return value as LockContent;
  } catch {
    // Not a lock this store wrote: treat the holder as unknown rather than stale.
  }
  return undefined;
}

/** Signal 0 checks existence: EPERM means alive under another user. */
function isAlive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
}

async function releaseLock(fsl: FileSystem, path: string, token: string): Promise<void> {
  const holder = await readLock(fsl, path);
  if (typeof holder !== 'object' || holder.token !== token) return;
  // An unlink lost in a crash leaves a lock naming a dead process: the next writer takes it over.
  await unlinkIfPresent(fsl, path);
}

/** The pid named by `<directory>/LOCK` when a live process holds it; undefined when nobody does (or it names no pid). */
export async function lockHolder(fsl: FileSystem, directory: string): Promise<number | undefined> {
  const holder = await readLock(fsl, join(directory, 'LOCK'));
  return typeof holder === 'object' && isAlive(holder.pid) ? holder.pid : undefined;
}
