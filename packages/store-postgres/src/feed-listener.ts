import pg from 'pg';
import type { ChangeSignal } from '@sessionfold/core/store-kit';
import type { PgPool } from './pool.js';

/** How long after a lost listening connection the next attempt is made (followers poll meanwhile). */
const RECONNECT_MS = 1000;
/** Longest a connection attempt of the listener may take before it counts as failed. */
const CONNECT_TIMEOUT_MS = 5000;

/** Where the listening connection comes from: its own client on the URL, or one held from the application's pool. */
export type ListenSource = { connectionString: string } | { pool: PgPool };

/**
 * One connection per store object that `LISTEN`s on the schema's feed channel and turns each notification into
 * a `ChangeSignal` wake-up for the store's followers. Started by the first follower, kept until `stop`. A
 * dropped connection is replaced after `RECONNECT_MS`; meanwhile `listening` is false, so followers poll at
 * their shorter interval, and every reconnect wakes them once, for what was committed while nobody listened.
 */
export class FeedListener {
  readonly #source: ListenSource;
  readonly #channel: string;
  readonly #changes: ChangeSignal;
  #client: pg.Client | pg.PoolClient | undefined;
  #starting: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #listening = false;

  constructor(source: ListenSource, channel: string, changes: ChangeSignal) {
    this.#source = source;
    this.#channel = channel;
    this.#changes = changes;
  }

  /** Whether notifications arrive now (false before the first start, and while reconnecting). */
  get listening(): boolean {
    return this.#listening;
  }

  /** Starts listening if nothing is yet; never rejects (a failure schedules a retry). */
  start(): void {
    if (this.#stopped || this.#client !== undefined || this.#starting !== undefined || this.#timer !== undefined) return;
    this.#starting = this.#connect().finally(() => {
      this.#starting = undefined;
    });
  }

  /** Ends the connection and any retry; the listener never starts again. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#starting;
    this.#drop();
  }

  async #connect(): Promise<void> {
    let client: pg.Client | pg.PoolClient | undefined;
    try {
      if ('pool' in this.#source) {
        client = await this.#source.pool.connect();
      } else {
        // Bounded, so `close()`, which waits for an attempt in progress, cannot hang on an unreachable server.
        client = new pg.Client({ connectionString: this.#source.connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
        client.on('error', () => this.#lost(client));
        await client.connect();
        // Like the idle connections of the store's own pool, the listening one never keeps the process alive
        // (pg's Client has `unref`, which its type declarations leave out).
        (client as pg.Client & { unref(): void }).unref();
      }
      // A pooled client reports errors to the pool, and the store's pool listener ignores them: watch `end` too.
      client.on('error', () => this.#lost(client));
      client.on('end', () => this.#lost(client));
      client.on('notification', () => this.#changes.notify());
      await client.query(`LISTEN ${this.#channel}`);
    } catch {
      this.#release(client);
      this.#retry();
      return;
    }
    if (this.#stopped) {
      this.#release(client);
      return;
    }
    this.#client = client;
    this.#listening = true;
    // Whatever was committed while nobody listened is found by the read this wakes.
    this.#changes.notify();
  }

  #lost(client: pg.Client | pg.PoolClient | undefined): void {
    if (client === undefined || client !== this.#client) return;
    this.#drop();
    this.#retry();
  }

  #retry(): void {
    if (this.#stopped || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.start();
    }, RECONNECT_MS);
    this.#timer.unref();
  }

  #drop(): void {
    const client = this.#client;
    this.#client = undefined;
    this.#listening = false;
    this.#release(client);
  }

  #release(client: pg.Client | pg.PoolClient | undefined): void {
    if (client === undefined) return;
    client.removeAllListeners('notification');
    client.on('error', () => undefined);
    // A pooled client that listened is destroyed, not returned: the application's pool must not get it back listening.
    if ('release' in client) client.release(true);
    else client.end().catch(() => undefined);
  }
}
