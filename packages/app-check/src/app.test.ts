import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { memoryStore, type EventStore, type TranscriptEntry } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { postgresStore } from '@sessionfold/store-postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { INITIAL_MEMORY, openApp, runApp } from './app.js';

const PG_URL = process.env['SESSIONFOLD_PG_URL'];

const work = mkdtempSync(join(tmpdir(), 'sessionfold-app-check-'));
const schemas: string[] = [];
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  if (PG_URL !== undefined && schemas.length > 0) {
    const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
});

/**
 * Each store, opened and reopened on the same data (memory: the same store object, never closed in between); the
 * PostgreSQL case is tagged `postgres`, run against SESSIONFOLD_PG_URL.
 */
const STORES: { name: string; tags: string[]; open: () => Promise<{ open: () => Promise<EventStore>; reopens: boolean }> }[] = [
  {
    name: 'memory',
    tags: [],
    open: async () => {
      const store = memoryStore();
      return { open: async () => store, reopens: false };
    },
  },
  {
    name: 'file',
    tags: [],
    open: async () => {
      const directory = mkdtempSync(join(work, 'file-'));
      return { open: () => fileStore({ directory }), reopens: true };
    },
  },
  {
    name: 'SQLite',
    tags: [],
    open: async () => {
      const path = join(mkdtempSync(join(work, 'sqlite-')), 'sessions.db');
      return { open: () => sqliteStore({ path }), reopens: true };
    },
  },
  {
    name: 'PostgreSQL',
    tags: ['postgres'],
    open: async () => {
      const schema = `app_check_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      return { open: () => postgresStore({ connectionString: PG_URL as string, schema }), reopens: true };
    },
  },
];

describe.each(STORES)('an application written as the README shows, on the $name store', ({ tags, open }) => {
  it('reads back every key it wrote, the whole transcript after completion, its commands and its object, typed', { tags }, async () => {
    const subject = await open();
    const first = await subject.open();
    const run = await runApp(first, 'trip-1');
    if (subject.reopens) await first.close();

    // A new process's view: the store opened again, a new service on it.
    const store = subject.reopens ? await subject.open() : first;
    const history = await openApp(store);
    try {
      const record = await history.get(run.sessionId);
      expect(record).toEqual(run.completed);
      expect(record.phase).toBe('complete');
      // Typed without a cast: `data` is the schema's type, the view's members are typed too.
      const memory: string[] = record.data?.myAgentMemory ?? [];
      const language: string | undefined = record.data?.preferences.language;
      const transcript: TranscriptEntry[] = record.state.transcript;
      const firstLine: string | undefined = record.state.transcript[0]?.content;
      expect(record.data).toEqual({ ...INITIAL_MEMORY, myAgentMemory: ['learned from turn 1', 'learned from turn 2'], turns: 2, goal: 'trip planned' });
      expect(memory).toEqual(['learned from turn 1', 'learned from turn 2']);
      expect(language).toBe('en');
      expect(firstLine).toBe('Find me a train to Lyon.');
      expect(transcript.map((line) => [line.role, line.content])).toEqual([
        ['user', 'Find me a train to Lyon.'],
        ['assistant', 'Answer 1'],
        ['user', 'And a hotel near the station.'],
        ['assistant', 'Answer 2'],
      ]);
      expect(record.state.transcriptText).toContain('[assistant-message]\nAnswer 2');
      // The control state the service made at start is kept, though the application never sent it back.
      expect(record.state.startIdempotencyId).toBe('trip-1');
      expect(record.state.sessionType).toBe('agent');
      expect(record.state.commands.map((command) => [command.id, command.status, command.outcome])).toEqual(
        run.commandIds.map((id) => [id, 'complete', { answered: true }]),
      );
      expect(record.state.objects.map((object) => [object.pendingId, object.fileName, object.size])).toEqual([[run.pendingId, 'itinerary.txt', 10]]);
      expect(new TextDecoder().decode((await history.object(run.sessionId, run.pendingId)).bytes)).toBe('Lyon, 9:02');
      expect(record.lastActivityAt >= record.startedAt).toBe(true);

      // Listed once, under its own id, with its type; no data in a summary.
      const listed = await history.list({ phase: 'complete' });
      expect(listed.map((summary) => [summary.id, summary.state.sessionType])).toEqual([[run.sessionId, 'agent']]);
      expect(listed).toEqual(run.listed);
      expect(listed[0]).not.toHaveProperty('data');

      // Data the schema refuses is refused, naming the field; the completed session refuses writes.
      const { value: next } = await history.start({ idempotencyId: 'trip-1', startedAt: new Date().toISOString(), sessionType: 'agent', data: INITIAL_MEMORY });
      expect(next.id).not.toBe(run.sessionId);
      await expect(
        history.checkpoint(next.id, { expectedVersion: next.version, data: (current) => ({ ...(current ?? INITIAL_MEMORY), turns: -1 }) }),
      ).rejects.toMatchObject({ code: 'invalid_request', field: 'data.turns' });
      await expect(history.appendTranscript(run.sessionId, { role: 'user-message', text: 'late' })).rejects.toMatchObject({ code: 'state_conflict' });
    } finally {
      await history.close();
      await store.close();
    }
  });
});
