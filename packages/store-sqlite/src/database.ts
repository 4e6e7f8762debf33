import Database from 'better-sqlite3';

/** The result of a write statement: rows changed and the rowid of the last inserted row. */
export interface SqliteRunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** The subset of better-sqlite3's Statement that the store uses. */
export interface SqliteStatement {
  run(...params: readonly unknown[]): SqliteRunResult;
  get(...params: readonly unknown[]): unknown;
  iterate(...params: readonly unknown[]): IterableIterator<unknown>;
  all(...params: readonly unknown[]): unknown[];
  /** Makes `get`/`iterate` return the first column alone instead of a row object. */
  pluck(toggle?: boolean): this;
  /** Makes `get`/`iterate` return rows as arrays in column order, cheaper to build than objects. */
  raw(toggle?: boolean): this;
}

/** The subset of better-sqlite3's Database that the store uses. */
export interface SqliteDatabase {
  readonly inTransaction: boolean;
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  pragma(sql: string, options?: { simple?: boolean }): unknown;
  close(): unknown;
}

/** Opens (creating if needed, unless `readonly`) the database file at `path` with SQLite's busy timeout set. */
export function openDatabase(path: string, busyTimeoutMs: number, readonly = false): SqliteDatabase {
  const options = readonly ? { timeout: busyTimeoutMs, readonly: true, fileMustExist: true } : { timeout: busyTimeoutMs };
  return new Database(path, options) as unknown as SqliteDatabase;
}

/** Opens an existing database file for reading only: nothing done through it can change the file. */
export function openDatabaseReadOnly(path: string, busyTimeoutMs: number): SqliteDatabase {
  return new Database(path, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs }) as unknown as SqliteDatabase;
}
