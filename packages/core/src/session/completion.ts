import type { EventStore, StreamId } from '../kernel/port.js';
import { decideRecordReceipt, decideReleaseStartKey } from './decisions.js';
import type { CatalogEvent, SessionEvent, StartKeyEvent } from './events.js';
import { CATALOG_STREAM, RECEIPT_ID_NAMESPACE, startKeyStream, uuidV5 } from './ids.js';
import type { CatalogState, CompletionReceipt, SessionStreamState, StartKeyState } from './model.js';
import type { StreamWriter } from './stream-writer.js';

/**
 * The steps that finish a completed session across three streams: its receipt into the catalog, its start
 * key released, then its stream deleted. Each step is idempotent and checks what is already done, so running
 * them again after a crash between any two of them (the service does so when it opens) completes the work.
 */
export class CompletionSteps {
  readonly #store: EventStore;
  readonly #sessions: StreamWriter<SessionStreamState, SessionEvent>;
  readonly #keys: StreamWriter<StartKeyState, StartKeyEvent>;
  readonly #catalog: StreamWriter<CatalogState, CatalogEvent>;

  constructor(
    store: EventStore,
    writers: {
      sessions: StreamWriter<SessionStreamState, SessionEvent>;
      keys: StreamWriter<StartKeyState, StartKeyEvent>;
      catalog: StreamWriter<CatalogState, CatalogEvent>;
    },
  ) {
    this.#store = store;
    this.#sessions = writers.sessions;
    this.#keys = writers.keys;
    this.#catalog = writers.catalog;
  }

  /** Puts `receipt` in the catalog unless its session object is there already (the first receipt wins). */
  async ensureReceipt(receipt: CompletionReceipt): Promise<void> {
    await this.#catalog.mutate(CATALOG_STREAM, (catalog) => decideRecordReceipt(catalog, receipt), uuidV5(receipt.sessionObjectId, RECEIPT_ID_NAMESPACE));
  }

  /**
   * Finishes session stream `stream` if it is complete: receipt (if any), start key released, and the stream deleted
   * unless its completion kept it. `delete: true` deletes a kept one too (`deleteSession`).
   */
  finish(stream: StreamId, options?: { delete?: boolean }): Promise<void> {
    return this.#sessions.exclusive(stream, () =>
      this.#sessions.retrying(stream, async () => {
        const { state, revision, exists } = await this.#sessions.load(stream);
        const kept = state.kept === true;
        if (!exists || state.record?.phase !== 'complete' || (!state.receipt && !kept)) return;
        if (state.receipt) await this.ensureReceipt(state.receipt);
        const key = state.startKey;
        // Released before the delete: a start that finds the stream gone must already know it is not to be made again.
        if (key !== null) await this.#keys.mutate(startKeyStream(key), (keyState, at) => decideReleaseStartKey(keyState, key, state.sessionId, at));
        if (kept && options?.delete !== true) return;
        await this.#store.deleteStream(stream, { expectedRevision: revision });
        this.#sessions.forget(stream);
      }),
    );
  }
}
