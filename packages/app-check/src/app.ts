// An application as the root README's "Use it" shows one: its own data typed by a zod schema, commands run by a
// worker, a transcript, an object, and completion, on whatever store it is given.
import { openSessionHistory, type EventStore, type SessionHistory, type SessionRecord, type SessionSummary } from '@sessionfold/core';
import { z } from 'zod';

/** The application's own state of an agent session: what it must find again, whole, after completion. */
export const agentMemorySchema = z.object({
  myAgentMemory: z.array(z.string()),
  goal: z.string(),
  turns: z.number().int().min(0),
  preferences: z.object({ language: z.string(), verbose: z.boolean() }),
});
export type AgentMemory = z.infer<typeof agentMemorySchema>;

/** Where every session of the application starts. */
export const INITIAL_MEMORY: AgentMemory = { myAgentMemory: [], goal: 'plan a trip', turns: 0, preferences: { language: 'en', verbose: false } };

/** What one run of the application leaves behind. */
export interface AppRun {
  sessionId: string;
  commandIds: string[];
  pendingId: string;
  completed: SessionRecord<AgentMemory>;
  listed: SessionSummary[];
}

/** Opens the service the way the application does: its data checked by its schema, and typed by it. */
export function openApp(store: EventStore): Promise<SessionHistory<AgentMemory>> {
  return openSessionHistory({ store, validateData: agentMemorySchema });
}

/** One whole session: start, two commands each answered in the transcript, an object, completion. */
export async function runApp(store: EventStore, key: string): Promise<AppRun> {
  const history = await openApp(store);
  try {
    const startedAt = new Date().toISOString();
    const { value: session } = await history.start({
      idempotencyId: key,
      startedAt,
      sessionType: 'agent',
      data: INITIAL_MEMORY,
    });
    const commandIds: string[] = [];
    let version = session.version;
    for (const [index, text] of ['Find me a train to Lyon.', 'And a hotel near the station.'].entries()) {
      await history.appendTranscript(session.id, { role: 'user-message', text });
      const { value: command } = await history.enqueue(session.id, { idempotencyId: `turn-${index + 1}`, kind: 'message', payload: { text } });
      commandIds.push(command.id);
      await history.claimCommand(command.id, { worker: 'agent-1', leaseMs: 30_000 });
      await history.appendTranscript(session.id, { role: 'assistant-message', text: `Answer ${index + 1}` });
      await history.completeCommand(command.id, { outcome: { answered: true }, worker: 'agent-1' });
      // Only the application's data changes: the control state is kept as it is.
      const saved = await history.checkpoint(session.id, {
        expectedVersion: version,
        data: (current) => ({
          ...(current ?? INITIAL_MEMORY),
          myAgentMemory: [...(current ?? INITIAL_MEMORY).myAgentMemory, `learned from turn ${index + 1}`],
          turns: (current ?? INITIAL_MEMORY).turns + 1,
        }),
        userActivity: true,
      });
      version = saved.version;
    }
    const pendingId = await history.stageObject(session.id, {
      fileName: 'itinerary.txt',
      mediaType: 'text/plain',
      bytes: new TextEncoder().encode('Lyon, 9:02'),
    });
    await history.complete(session.id, { expectedVersion: version, data: (current) => ({ ...(current ?? INITIAL_MEMORY), goal: 'trip planned' }) });
    return { sessionId: session.id, commandIds, pendingId, completed: await history.get(session.id), listed: await history.list({ phase: 'complete' }) };
  } finally {
    await history.close();
  }
}
