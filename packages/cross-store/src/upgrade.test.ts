import { copyFileSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  compactStream,
  foldStream,
  openSessionHistory,
  SchemaVersionTooNewError,
  type EventStore,
  type JsonObject,
  type JsonValue,
  type RecordedEvent,
  type StreamReducer,
} from '@sessionfold/core';
import { sessionReducer, type SessionStreamState } from '@sessionfold/core/session';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';

/**
 * Version 2 of the session reducer, as an application would write it: the state's `firstUserMessage` is renamed
 * `openingMessage`, and `TranscriptAppended`'s `text` is renamed `body` (data version 2). It wraps version 1,
 * translating at its edges, so the test checks the versioning machinery rather than a second reducer.
 */
type SessionStateV2 = Omit<SessionStreamState, 'firstUserMessage'> & { openingMessage: string | null };

const renameKey = (value: JsonValue, from: string, to: string): JsonValue => {
  const { [from]: moved, ...rest } = value as JsonObject;
  return { ...rest, [to]: moved ?? null };
};
const toV1State = (state: SessionStateV2): SessionStreamState => {
  const { openingMessage, ...rest } = state;
  return { ...rest, firstUserMessage: openingMessage };
};
const toV2State = (state: SessionStreamState): SessionStateV2 => {
  const { firstUserMessage, ...rest } = state;
  return { ...rest, openingMessage: firstUserMessage };
};
const migrateToV2 = (state: JsonValue): JsonValue => renameKey(state, 'firstUserMessage', 'openingMessage');

const sessionReducerV2: StreamReducer<SessionStateV2> = {
  schemaVersion: 2,
  migrations: [{ from: 1, to: 2, migrate: migrateToV2 }],
  upcasters: { TranscriptAppended: [{ from: 1, to: 2, upcast: (data) => renameKey(data, 'text', 'body') }] },
  initial: (stream) => toV2State(sessionReducer.initial(stream)),
  apply: (state, event) => {
    if (event.type === 'TranscriptAppended' && event.schemaVersion !== 2) throw new Error(`the reducer was handed a version ${event.schemaVersion} transcript`);
    const v1Event: RecordedEvent = event.type === 'TranscriptAppended' ? { ...event, data: renameKey(event.data, 'body', 'text'), schemaVersion: 1 } : event;
    return toV2State(sessionReducer.apply(toV1State(state), v1Event));
  },
  toSnapshot: (state) => structuredClone(state) as unknown as JsonValue,
  fromSnapshot: (state) => toV2State(sessionReducer.fromSnapshot(renameKey(state, 'openingMessage', 'firstUserMessage'))),
};

/** What folding with version 1 and then migrating the result gives: the state version 2 must fold to. */
async function replayedWithMigration(store: EventStore, stream: string) {
  const v1 = await foldStream(store, stream, sessionReducer);
  return { ...v1, state: sessionReducerV2.fromSnapshot(migrateToV2(sessionReducer.toSnapshot(v1.state))) };
}

const directories: string[] = [];
afterAll(() => {
  for (const dir of directories) rmSync(dir, { recursive: true, force: true });
});
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sessionfold-upgrade-'));
  directories.push(dir);
  return dir;
}

const fixture = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

/** Each store written by release 0.1.0, copied to a fresh place and opened with this release. */
const RELEASE_STORES: Array<{ name: string; open: () => Promise<{ store: EventStore; reopen: () => Promise<EventStore> }> }> = [
  {
    name: 'file store',
    open: async () => {
      const directory = join(freshDir(), 'store');
      cpSync(fixture('store-file/src/fixtures/release-0.1.0'), directory, { recursive: true });
      return { store: await fileStore({ directory }), reopen: () => fileStore({ directory }) };
    },
  },
  {
    name: 'SQLite database',
    open: async () => {
      const path = join(freshDir(), 'store.db');
      copyFileSync(fixture('store-sqlite/src/fixtures/release-0.1.0.db'), path);
      return { store: await sqliteStore({ path }), reopen: () => sqliteStore({ path }) };
    },
  },
];

async function sessionStreams(store: EventStore): Promise<string[]> {
  const streams: string[] = [];
  for await (const { stream } of store.streams({ prefix: 'session-' })) streams.push(stream);
  return streams;
}

describe.each(RELEASE_STORES)('a $name written by release 0.1.0, folded by version 2 of the session reducer', ({ open }) => {
  it('folds every session to what replaying with version 1 and migrating gives, the compacted one included', async () => {
    const { store } = await open();
    try {
      const streams = await sessionStreams(store);
      expect(streams).toHaveLength(2);
      expect((await store.read(streams[0] as string)).snapshot?.identity.schemaVersion).toBe(1);
      for (const stream of streams) {
        const folded = await foldStream(store, stream, sessionReducerV2);
        expect(folded).toEqual(await replayedWithMigration(store, stream));
        expect(folded.state.openingMessage).toEqual(expect.any(String));
        expect(folded.state).not.toHaveProperty('firstUserMessage');
      }
    } finally {
      await store.close();
    }
  });

  it('compaction writes version 2 snapshots, which survive a reopen; version 1 then refuses them, naming both versions', async () => {
    const { store, reopen } = await open();
    const streams = await sessionStreams(store);
    const expected = new Map<string, unknown>();
    try {
      for (const stream of streams) {
        expected.set(stream, await replayedWithMigration(store, stream));
        await compactStream(store, stream, sessionReducerV2);
      }
    } finally {
      await store.close();
    }
    const reopened = await reopen();
    try {
      for (const stream of streams) {
        const read = await reopened.read(stream);
        expect(read.snapshot?.identity.schemaVersion).toBe(2);
        expect(read.snapshot?.state).toHaveProperty('openingMessage');
        expect(await foldStream(reopened, stream, sessionReducerV2)).toEqual(expected.get(stream));
        const refused = await foldStream(reopened, stream, sessionReducer).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(SchemaVersionTooNewError);
        expect(refused).toMatchObject({ code: 'schema_version_too_new', stream, subject: 'snapshot', found: 2, supported: 1 });
      }
      // The service of this release folds with version 1: it refuses to open on the newer state, never resets it.
      const listed = async () => {
        const service = await openSessionHistory({ store: reopened });
        try {
          return await service.list();
        } finally {
          await service.close();
        }
      };
      expect(await listed().catch((error: unknown) => error)).toMatchObject({ code: 'internal_error', cause: expect.any(SchemaVersionTooNewError) });
    } finally {
      await reopened.close();
    }
  });

  it('takes version 2 transcript events next to the version 1 ones it upcasts; version 1 refuses the new ones', async () => {
    const { store, reopen } = await open();
    const stream = (await sessionStreams(store))[1] as string;
    try {
      const { revision } = await store.read(stream);
      const at = '2026-12-01T00:00:00.000Z';
      await store.append(stream, [{ type: 'TranscriptAppended', data: { at, role: 'assistant-message', body: 'upgraded' }, schemaVersion: 2 }], {
        expectedRevision: revision,
      });
    } finally {
      await store.close();
    }
    const reopened = await reopen();
    try {
      const folded = await foldStream(reopened, stream, sessionReducerV2);
      const last = folded.state.log.flat().at(-1);
      expect(last).toMatchObject({ role: 'assistant-message', text: 'upgraded' });
      const refused = await foldStream(reopened, stream, sessionReducer).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'schema_version_too_new', subject: 'event', eventType: 'TranscriptAppended', found: 2, supported: 1 });
    } finally {
      await reopened.close();
    }
  });
});
