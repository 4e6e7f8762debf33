import { describe, expect, it } from 'vitest';
import { memoryStore } from '../kernel/index.js';
import type { CatchUpObservation } from './projection.js';
import { openTestHistory, startConversation } from './test-support.fixture.js';

/** Resolves once `condition` holds, looking every 5 ms; fails after 5 s. */
async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 5000) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('the projection follows the store', () => {
  it("applies another service's writes without a call, and a read-only service follows only when asked", async () => {
    const store = memoryStore();
    const heard = { following: [] as CatchUpObservation[], readOnly: [] as CatchUpObservation[], readOnlyFollowing: [] as CatchUpObservation[] };
    const hear = (into: CatchUpObservation[]) => ({ projectionCaughtUp: (caughtUp: CatchUpObservation) => void into.push(caughtUp) });
    const { history: following } = await openTestHistory({ store, observer: hear(heard.following) });
    const { history: readOnly } = await openTestHistory({ store, readOnly: true, observer: hear(heard.readOnly) });
    const { history: readOnlyFollowing } = await openTestHistory({ store, readOnly: true, follow: true, observer: hear(heard.readOnlyFollowing) });
    const { history: writer } = await openTestHistory({ store, follow: false });

    await startConversation(writer, 'followed');
    let end = 0;
    for await (const record of store.readAll()) end = record.position;
    const reached = (observations: CatchUpObservation[]) => observations.some((caughtUp) => caughtUp.source === 'follow' && caughtUp.position >= end);
    await until(() => reached(heard.following) && reached(heard.readOnlyFollowing));
    // The memory store wakes its followers on each commit: by now a read-only service that followed would have heard.
    expect(heard.readOnly).toEqual([]);
    expect(heard.following.filter((caughtUp) => caughtUp.source === 'catch-up')).toEqual([]);

    for (const history of [following, readOnly, readOnlyFollowing, writer]) await history.close();
  });
});
