import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresStore } from './index.js';
import { PG_URL, dropSchema, endAdmin, freshSchema } from './test-support.fixture.js';

describe('the README example', () => {
  const schema = freshSchema('readme');
  afterAll(async () => {
    // The other test needs no server: without one, there is nothing to drop.
    if (PG_URL === undefined) return;
    await dropSchema(schema);
    await endAdmin();
  });

  it('runs as written', { tags: ['postgres'] }, async () => {
    const databaseUrl = PG_URL as string;
    const log: unknown[] = [];
    const console = { log: (...values: unknown[]) => log.push(values) };
    // #region readme
    const store = await postgresStore({ connectionString: databaseUrl, schema });
    await store.append('session-1', [{ type: 'Started', data: { by: 'ada' } }], { expectedRevision: 'no_stream' });
    await store.append('session-1', [{ type: 'Noted', data: { text: 'hello' }, eventId: 'note-1' }], { expectedRevision: 1 });
    const { revision, events } = await store.read('session-1');
    for await (const event of events) console.log(event.revision, event.type);
    console.log('at revision', revision);
    await store.close();
    // #endregion readme
    expect(log).toEqual([
      [1, 'Started'],
      [2, 'Noted'],
      ['at revision', 2],
    ]);
  });

  it('is the code of this test, word for word', () => {
    const here = readFileSync(fileURLToPath(import.meta.url), 'utf8');
    const region = /\/\/ #region readme\n([\s\S]*?)\n\s*\/\/ #endregion readme/.exec(here)?.[1] ?? '';
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const lines = (text: string) =>
      text
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line.length > 0 && !line.startsWith('import '));
    expect(lines(region).length).toBeGreaterThan(0);
    expect(lines(block)).toEqual(lines(region));
  });
});
