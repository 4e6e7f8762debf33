import type { EventStore } from '@sessionfold/core/kernel';
import {
  PagedEvents,
  eventFromRow,
  followFeed,
  storedEventFromRow,
  validateFollowOptions,
  validateReadAllOptions,
  type EventRow,
} from '@sessionfold/core/store-kit';
import type { StoreContext } from './context.js';
import { transientFailure } from './errors.js';
import { FeedListener } from './feed-listener.js';
import { LATER_PAGE_SIZE, PAGE_SIZE } from './queries.js';
import { feedChannel } from './schema.js';

/**
 * How often a follower reads the feed again when nothing woke it. Commits of this store object wake followers
 * at once, and commits of every other connection send a NOTIFY that does, so this is the safety net: a change
 * made elsewhere is yielded within at most `POLL_MS` (plus one feed query) even if a notification is lost,
 * and within `POLL_UNHEARD_MS` while the listening connection is being replaced.
 */
const POLL_MS = 1000;
const POLL_UNHEARD_MS = 250;

/** The port's feed reads and `follow`, with the connection that listens for other connections' commits. */
export type Feed = Required<Pick<EventStore, 'readAll' | 'readAllStored' | 'follow'>> & { readonly listener: FeedListener };

/** The change feed: read in pages by position, followed by polling and by NOTIFY. */
export function createFeed(ctx: StoreContext): Feed {
  const { q, rows, live, config, changes } = ctx;
  const listener = new FeedListener(
    config.pool === undefined ? { connectionString: config.connectionString as string } : { pool: ctx.pool },
    feedChannel(ctx.schema),
    changes,
  );

  /** The feed from the read options' position, each record built by `fromRow`. */
  const feedPaged = <T>(readOptions: unknown, fromRow: (row: EventRow) => T): PagedEvents<T> => {
    live();
    let next = validateReadAllOptions(readOptions);
    // Bounded by the last position when the first page is read, like a snapshot of the feed; a consumer
    // goes on from where it stopped. Every write holds the counter until it commits, so whatever a
    // statement sees of the feed is a prefix of it: a later page can never reveal a position before one seen.
    let last: number | undefined;
    return new PagedEvents(
      [],
      async () => {
        live();
        let page: EventRow[];
        let size = LATER_PAGE_SIZE;
        if (last === undefined) {
          size = PAGE_SIZE;
          const result = await rows<[number, ...EventRow]>(q.feedFirst([next]));
          const top = result[0] as [number, ...EventRow];
          last = top[0];
          if (top[1] === null) return undefined;
          page = result.map((row) => row.slice(1) as unknown as EventRow);
        } else {
          if (next > last) return undefined;
          page = await rows<EventRow>(q.feedPage([next]));
        }
        const bound = last;
        const kept = page.length > 0 && (page[page.length - 1] as EventRow)[0] > bound ? page.filter((row) => row[0] <= bound) : page;
        const end = kept[kept.length - 1];
        // A short page is the end of the table as this statement saw it: nothing more up to the bound.
        next = end === undefined || kept.length < size ? bound + 1 : end[0] + 1;
        return kept.length === 0 ? undefined : kept;
      },
      fromRow,
    );
  };

  const feed: Feed = {
    listener,
    readAll: (readOptions) => feedPaged(readOptions, eventFromRow),
    readAllStored: (readOptions) => feedPaged(readOptions, storedEventFromRow),
    follow(followOptions) {
      live();
      const { fromPosition, signal, keepAlive } = validateFollowOptions(followOptions);
      listener.start();
      return followFeed(
        {
          readAll: (from) => feed.readAll({ fromPosition: from }),
          changes,
          get pollMs() {
            return listener.listening ? POLL_MS : POLL_UNHEARD_MS;
          },
          // A restart or a killed connection passes: the pool connects anew on the next read.
          transient: transientFailure,
          observe: config.observe,
        },
        fromPosition,
        signal,
        keepAlive,
      );
    },
  };
  return feed;
}
