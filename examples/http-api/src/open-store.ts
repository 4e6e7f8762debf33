import { isAbsolute, resolve } from 'node:path';
import type { EventStore } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';

/** The store a server runs on, opened, with a printable description of where it is. */
export interface OpenedStore {
  store: EventStore;
  description: string;
}

/**
 * Opens the store named by `url`: `sqlite:FILE` for one SQLite file, `file:DIR` or a plain path for a file store
 * directory. Relative paths are taken from the current directory.
 */
export async function openStore(url: string): Promise<OpenedStore> {
  if (/^sqlite:/i.test(url)) {
    const path = absolute(url.slice('sqlite:'.length), url);
    return { store: await sqliteStore({ path }), description: `SQLite store ${path}` };
  }
  // Another scheme (postgres://, …) is not a directory: refuse it rather than create a folder by that name.
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) && !/^file:/i.test(url)) {
    throw new Error(`the store URL ${JSON.stringify(url)} is neither file: nor sqlite:; this example serves those two`);
  }
  const directory = absolute(/^file:/i.test(url) ? url.slice('file:'.length) : url, url);
  return { store: await fileStore({ directory }), description: `file store in ${directory}` };
}

function absolute(path: string, url: string): string {
  if (path === '') throw new Error(`the store URL ${JSON.stringify(url)} names no path: try file:./data or sqlite:./sessions.db`);
  return isAbsolute(path) ? path : resolve(path);
}
