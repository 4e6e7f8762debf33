import { CorruptionError, InvalidInputError, StorageError } from '@sessionfold/core/kernel';
import { describe, expect, it } from 'vitest';
import { transientFailure, translateError } from './errors.js';

const driverError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('translateError', () => {
  it('makes damage a CorruptionError naming the file, with the driver error as cause', () => {
    for (const code of ['SQLITE_CORRUPT', 'SQLITE_CORRUPT_INDEX', 'SQLITE_NOTADB']) {
      const cause = driverError(code, 'database disk image is malformed');
      const error = translateError(cause, '/data/store.db', 5000);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(error).toMatchObject({ file: '/data/store.db', cause });
    }
  });

  it('says a lock was held past the timeout, and that nothing was written', () => {
    const error = translateError(driverError('SQLITE_BUSY', 'database is locked'), '/data/store.db', 250);
    expect(error).toBeInstanceOf(StorageError);
    expect(error.message).toContain('more than 250 ms');
    expect(error.message).toContain('nothing was written');
    expect((error as StorageError).poisoned).toBe(false);
  });

  it('poisons the store on an I/O error, since what reached the disk is unknown', () => {
    const error = translateError(driverError('SQLITE_IOERR_FSYNC', 'disk I/O error'), '/data/store.db', 5000);
    expect(error).toBeInstanceOf(StorageError);
    expect((error as StorageError).poisoned).toBe(true);
  });

  it('reports a full disk as a StorageError that does not poison the store', () => {
    const error = translateError(driverError('SQLITE_FULL', 'database or disk is full'), '/data/store.db', 5000);
    expect(error).toMatchObject({ code: 'storage_error', poisoned: false });
    expect(error.message).toContain('full');
  });

  it('passes its own errors through unchanged and wraps anything else', () => {
    const own = new InvalidInputError('stream', 'bad');
    expect(translateError(own, '/data/store.db', 5000)).toBe(own);
    const other = new TypeError('boom');
    expect(translateError(other, '/data/store.db', 5000)).toMatchObject({ code: 'storage_error', cause: other });
  });

  it('a follower waits out a lock held past the timeout, but not damage, a disk error or a full disk', () => {
    const of = (code: string) => transientFailure(translateError(driverError(code, code), '/data/store.db', 5000));
    expect(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_LOCKED'].map(of)).toEqual([true, true, true]);
    expect(['SQLITE_CORRUPT', 'SQLITE_IOERR_READ', 'SQLITE_FULL', 'SQLITE_MISUSE'].map(of)).toEqual([false, false, false, false]);
    expect(transientFailure(new StorageError('no cause'))).toBe(false);
  });
});
