import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { SqliteDatabase } from './database.js';
import { openConnection } from './connection.js';
import { readOptions } from './options.js';
import { prepareStatements } from './statements.js';
import { freshPath } from './test-support.fixture.js';

describe('prepared statements', () => {
  it('are each served by an index or the primary key: none scans a table', () => {
    const path = freshPath();
    openConnection(readOptions({ path })).close();
    const db = new Database(path);
    const statements = prepareStatements(db as unknown as SqliteDatabase) as unknown as Record<string, Database.Statement>;
    const plans = Object.entries(statements)
      .filter(([, statement]) => statement.reader || /^\s*(DELETE|UPDATE)/i.test(statement.source))
      .map(([name, statement]) => {
        const parameters = (statement.source.match(/\?/g) ?? []).map(() => null);
        const plan = db.prepare(`EXPLAIN QUERY PLAN ${statement.source}`).all(...parameters) as { detail: string }[];
        return { name, plan: plan.map((row) => row.detail) };
      });
    expect(plans.length).toBeGreaterThan(10);
    for (const { name, plan } of plans) {
      expect(
        plan.filter((detail) => /^SCAN (?!CONSTANT ROW)/.test(detail)),
        `${name}: ${plan.join(' | ')}`,
      ).toEqual([]);
    }
    db.close();
  });
});
