import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from './exit-codes.js';
import { describeLocation, parseStoreUrl } from './store-url.js';

describe('store URLs', () => {
  it('name file stores by file: URL or plain path, SQLite files by sqlite: URL', () => {
    expect(parseStoreUrl('file:./data')).toEqual({ kind: 'file', directory: resolve('data') });
    expect(parseStoreUrl('file:///srv/data')).toEqual({ kind: 'file', directory: '/srv/data' });
    expect(parseStoreUrl('./data')).toEqual({ kind: 'file', directory: resolve('data') });
    expect(parseStoreUrl('/srv/data')).toEqual({ kind: 'file', directory: '/srv/data' });
    expect(parseStoreUrl('sqlite:./sessions.db')).toEqual({ kind: 'sqlite', path: resolve('sessions.db') });
    expect(parseStoreUrl('sqlite:///srv/sessions.db')).toEqual({ kind: 'sqlite', path: '/srv/sessions.db' });
  });

  it('take the schema of a PostgreSQL URL apart and never print its password', () => {
    const location = parseStoreUrl('postgres://app:secret@db.internal:5432/sessions?schema=tenant_a&sslmode=require');
    expect(location).toEqual({ kind: 'postgres', connectionString: 'postgres://app:secret@db.internal:5432/sessions?sslmode=require', schema: 'tenant_a' });
    expect(describeLocation(location)).not.toContain('secret');
    expect(parseStoreUrl('postgresql://localhost/db')).toMatchObject({ kind: 'postgres', schema: undefined });
  });

  it('refuse no store, an unknown scheme and an empty path as usage errors', () => {
    for (const url of [undefined, '', 'mysql://localhost/db', 'sqlite:', 'file:']) {
      expect(() => parseStoreUrl(url), String(url)).toThrow(CliError);
      try {
        parseStoreUrl(url);
      } catch (error) {
        expect((error as CliError).exitCode).toBe(2);
      }
    }
  });
});
