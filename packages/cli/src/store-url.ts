import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { usageError } from './exit-codes.js';

/** Where a store lives, parsed from a store URL. */
export type StoreLocation =
  | { kind: 'file'; directory: string }
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; connectionString: string; schema: string | undefined };

/** The environment variable `--store` defaults to. */
export const STORE_ENV = 'SESSIONFOLD_STORE';

/**
 * Parses a store URL: `file:DIR` (or a plain directory path), `sqlite:FILE`, `postgres://…` or
 * `postgresql://…` (`?schema=name` picks the schema). Anything else is a usage error.
 */
export function parseStoreUrl(url: string | undefined): StoreLocation {
  if (url === undefined || url.trim() === '') {
    throw usageError(`no store given: pass --store URL or set ${STORE_ENV}`, 'Try: sessionfold info --store file:./data');
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw usageError(`not a valid PostgreSQL URL: ${redact(url)}`);
    }
    // Given twice, either one could be meant: a guess would read or write the wrong schema.
    if (parsed.searchParams.getAll('schema').length > 1)
      throw usageError(`?schema= is given more than once in ${redact(url)}`, 'Try: one ?schema=name in the URL');
    const schema = parsed.searchParams.get('schema') ?? undefined;
    parsed.searchParams.delete('schema');
    return { kind: 'postgres', connectionString: parsed.toString(), schema };
  }
  if (/^file:/i.test(url)) return { kind: 'file', directory: pathOf(url, 'file') };
  if (/^sqlite:/i.test(url)) return { kind: 'sqlite', path: pathOf(url, 'sqlite') };
  // A scheme other than a Windows drive letter is a typo or a store this release does not know.
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(url);
  if (scheme && !/^[a-z]:[\\/]/i.test(url)) {
    throw usageError(
      `unknown store URL scheme ${JSON.stringify(scheme[1])} in ${redact(url)}`,
      'Try: file:./data, sqlite:./sessions.db or postgres://user@host/db',
    );
  }
  return { kind: 'file', directory: resolve(url) };
}

/** A printable location: the path, or the PostgreSQL URL without its password. */
export function describeLocation(location: StoreLocation): string {
  switch (location.kind) {
    case 'file':
      return location.directory;
    case 'sqlite':
      return location.path;
    case 'postgres':
      return redact(location.connectionString) + (location.schema === undefined ? '' : ` (schema ${location.schema})`);
  }
}

function pathOf(url: string, scheme: string): string {
  const rest = url.slice(scheme.length + 1);
  if (rest.startsWith('//')) {
    try {
      return fileURLToPath(`file:${rest}`);
    } catch (cause) {
      throw usageError(`not a valid ${scheme}: URL: ${url} (${cause instanceof Error ? cause.message : String(cause)})`);
    }
  }
  if (rest === '') throw usageError(`${scheme}: needs a path, e.g. ${scheme}:./${scheme === 'file' ? 'data' : 'sessions.db'}`);
  return isAbsolute(rest) ? rest : resolve(rest);
}

function redact(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
}
