import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSessionHistory } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { describe, expect, it } from 'vitest';
import { freshDir, HANG, jsonLines, mkfifo, run } from './test-support.fixture.js';

// An independent writer of the legacy service's files: the framing and field names as that service wrote
// them (`sha256hex SP json`; control records {kind, recordedAt, value}; lifecycle values in snake_case;
// command values in camelCase with conversationId), built here with node:crypto alone.

const A = '9078bb6e-0931-4477-9ce9-b1430d0335a2';
const B = '1c3f5a7e-2b4d-4c6e-8f01-23456789abcd';
const C = '5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9';

function frame(record: unknown): string {
  const payload = JSON.stringify(record);
  return `${createHash('sha256').update(payload).digest('hex')} ${payload}\n`;
}

function lifecycle(id: string, fields: Record<string, unknown>) {
  return {
    kind: 'session_lifecycle',
    recordedAt: (fields['updated_at'] as string | undefined) ?? '2026-07-24T00:00:00Z',
    value: {
      id,
      phase: 'active',
      started_at: '2026-07-24T00:00:00Z',
      updated_at: '2026-07-24T00:00:00Z',
      state: {},
      provenance_id: null,
      version: 1,
      last_user_message_at: null,
      ended_at: null,
      ingress_failure_count: 0,
      ingress_failures: [],
      ingress_next_attempt_at: null,
      ...fields,
    },
  };
}

function command(sessionId: string, fields: Record<string, unknown>) {
  return {
    kind: 'session_command',
    recordedAt: '2026-07-24T00:00:01Z',
    value: {
      id: 'command-1',
      conversationId: sessionId,
      sequence: 1,
      kind: 'message',
      payload: { text: 'hello' },
      status: 'pending',
      cancelRequested: false,
      outcome: null,
      createdAt: '2026-07-24T00:00:01Z',
      processingStartedAt: null,
      completedAt: null,
      idempotencyId: 'message-1',
      ...fields,
    },
  };
}

function failure(attempt: number) {
  return {
    attempt,
    at: `2026-07-24T00:0${attempt}:00Z`,
    stage: 'model_loop',
    code: 'ingress_error',
    message: 'transient failure',
    roundsUsed: null,
    contextTokens: null,
    contextWindowTokens: null,
  };
}

/** Writes the legacy directory and completed list; returns their paths. */
function writeLegacyData(): { sessions: string; completed: string } {
  const root = freshDir();
  const sessions = join(root, 'sessions');
  mkdirSync(sessions);
  const stateA = {
    stateVersion: 3,
    sessionId: A,
    sessionType: 'conversation',
    startIdempotencyId: 'legacy-start-1',
    rustLibSessionId: 'lib-1',
    chatendText: 'hello',
    boxes: { 1: { id: 1 } },
    historyIngress: { format: 'chat', kwebPlan: { creates: [{ pendingId: 'pending:9' }] }, chatendText: 'x' },
    unrecognized: 'discard me',
  };
  writeFileSync(
    join(sessions, `${A}.session-control`),
    frame(lifecycle(A, { version: 2, state: stateA, updated_at: '2026-07-24T00:00:02Z' })) +
      frame(command(A, {})) +
      frame(command(A, { id: 'command-2', sequence: 2, idempotencyId: 'message-2', createdAt: '2026-07-24T00:00:03Z' })) +
      frame(lifecycle(A, { version: 3, state: { ...stateA, pendingTurn: true }, updated_at: '2026-07-24T00:00:04Z' })) +
      frame(command(A, { status: 'complete', outcome: { accepted: true }, completedAt: '2026-07-24T00:00:05Z', processingStartedAt: '2026-07-24T00:00:04Z' })),
  );
  writeFileSync(join(sessions, `${A}.session-log`), 'an external format\n');
  writeFileSync(
    join(sessions, `${B}.session-control`),
    frame(
      lifecycle(B, {
        phase: 'ingress_pending',
        version: 9,
        provenance_id: `session:${B}`,
        state: { sessionType: 'conversation', startIdempotencyId: 'legacy-start-2' },
        ingress_failure_count: 4,
        ingress_failures: [failure(1), failure(2), failure(3), failure(4)],
        ingress_next_attempt_at: '2026-07-24T00:04:15Z',
        updated_at: '2026-07-24T00:04:00Z',
      }),
    ) + frame(lifecycle(B, { version: 10 })).slice(0, 50),
  );
  const lines = [frame(lifecycle(C, { version: 1 })), frame(lifecycle(C, { version: 2 })), frame(lifecycle(C, { version: 3 }))];
  lines[1] = `${'0'.repeat(64)}${(lines[1] as string).slice(64)}`;
  writeFileSync(join(sessions, `${C}.session-control`), lines.join(''));

  const completed = join(root, 'session-history.txt');
  const receipt = {
    transactionId: 'T2',
    sessionObjectId: 'B2222222',
    sessionId: null,
    sessionType: 'conversation',
    createdAt: null,
    committedAt: '2026-07-20T00:00:00Z',
    nodeIds: {},
    objectIds: {},
  };
  writeFileSync(completed, ['A1111111', JSON.stringify(receipt), 'A1111111', '', JSON.stringify({ ...receipt, sessionObjectId: 'A1111111' }), ''].join('\n'));
  return { sessions, completed };
}

interface Summary {
  ok: boolean;
  sessionsImported: number;
  sessionsPresent: number;
  commandsImported: number;
  receiptsImported: number;
  receiptsPresent: number;
  sessionLogsSkipped: number;
  note: string;
  problems: { severity: string; file: string; line?: number; message: string }[];
}

describe('import-legacy', () => {
  it("carries the legacy service's sessions, commands and receipts over as they were, and a rerun imports nothing", async () => {
    const { sessions, completed } = writeLegacyData();
    const dir = join(freshDir(), 'data');
    const url = `file:${dir}`;
    const first = await run(['import-legacy', sessions, '--completed-list', completed, '--json', '-s', url]);
    expect(first.code).toBe(1);
    const summary = JSON.parse(first.stdout) as Summary;
    expect(summary).toMatchObject({ ok: false, sessionsImported: 2, commandsImported: 2, receiptsImported: 2, sessionLogsSkipped: 1 });
    expect(summary.note).toMatch(/session-log/);
    expect(summary.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', file: `${C}.session-control`, line: 2, message: expect.stringMatching(/checksum/) }),
    );
    expect(summary.problems).toContainEqual(
      expect.objectContaining({ severity: 'warning', file: `${B}.session-control`, message: expect.stringMatching(/torn/) }),
    );

    const a = JSON.parse((await run(['show', A, '--json', '-s', url])).stdout) as { version: number; phase: string; state: Record<string, unknown> };
    expect(a).toMatchObject({ version: 3, phase: 'active' });
    expect(a.state).toMatchObject({
      libSessionId: 'lib-1',
      pendingTurn: true,
      historyIngress: { format: 'chat', archivePlan: { creates: [{ pendingId: 'pending:9' }] } },
    });
    for (const gone of ['rustLibSessionId', 'chatendText', 'boxes', 'unrecognized']) expect(a.state).not.toHaveProperty(gone);
    expect(a.state['historyIngress']).not.toHaveProperty('kwebPlan');

    const b = JSON.parse((await run(['show', B, '--json', '-s', url])).stdout) as Record<string, unknown>;
    expect(b).toMatchObject({
      phase: 'ingress_pending',
      version: 9,
      provenanceId: `session:${B}`,
      ingressFailureCount: 4,
      ingressNextAttemptAt: '2026-07-24T00:04:15Z',
    });
    expect(b['ingressFailures']).toEqual([failure(1), failure(2), failure(3), failure(4)]);
    expect((await run(['show', C, '-s', url])).code).toBe(3);
    const list = JSON.parse((await run(['list', '--json', '-s', url])).stdout) as { receipts: { sessionObjectId: string }[] };
    expect(list.receipts.map((receipt) => receipt.sessionObjectId).sort()).toEqual(['A1111111', 'B2222222']);

    const feed = jsonLines((await run(['tail', '-s', url])).stdout).length;
    const again = await run(['import-legacy', sessions, '--completed-list', completed, '--json', '-s', url]);
    expect(JSON.parse(again.stdout)).toMatchObject({ sessionsImported: 0, sessionsPresent: 2, commandsImported: 0, receiptsImported: 0, receiptsPresent: 2 });
    expect(jsonLines((await run(['tail', '-s', url])).stdout).length).toBe(feed);

    const store = await fileStore({ directory: dir });
    try {
      const history = await openSessionHistory({ store });
      const started = await history.start({ idempotencyId: 'legacy-start-1', startedAt: '2026-07-26T00:00:00Z', sessionType: 'conversation' });
      expect(started).toMatchObject({ created: false, value: { id: A, version: 3 } });
      const enqueued = await history.enqueue(A, { idempotencyId: 'message-1', kind: 'message', payload: {} });
      expect(enqueued).toMatchObject({ created: false, value: { id: 'command-1', status: 'complete', sequence: 1 } });
      expect((await history.commandHeads()).map((head) => head.id)).toEqual(['command-2']);
      expect((await history.enqueue(A, { idempotencyId: 'message-3', kind: 'message', payload: {} })).value.sequence).toBe(3);

      const inProgress = await history.startIngress(B, { expectedVersion: 9, provenanceId: `session:${B}` });
      const failed = await history.failIngress(B, { expectedVersion: inProgress.version, stage: 'model_loop', message: 'again' });
      expect(failed).toMatchObject({ phase: 'ingress_failed', ingressFailureCount: 5, ingressNextAttemptAt: null });
      await history.close();
    } finally {
      await store.close();
    }
  });

  it("renames legacy keys only in the service's own fields, never inside the caller's data", async () => {
    const root = freshDir();
    const sessions = join(root, 'sessions');
    mkdirSync(sessions);
    const state = {
      sessionType: 'conversation',
      rustLibSessionId: 'lib-1',
      channel: { chatendText: 'the caller’s own', kwebPlan: 'kept' },
      historyIngress: { kwebPlan: { creates: [{ rustLibSessionId: 'inner' }] } },
    };
    writeFileSync(join(sessions, `${A}.session-control`), frame(lifecycle(A, { state })));
    const url = `file:${join(freshDir(), 'data')}`;
    expect((await run(['import-legacy', sessions, '-s', url])).code).toBe(0);
    const a = JSON.parse((await run(['show', A, '--json', '-s', url])).stdout) as { state: Record<string, unknown> };
    const record = a.state;
    expect(record['libSessionId']).toBe('lib-1');
    expect(record['channel']).toEqual({ chatendText: 'the caller’s own', kwebPlan: 'kept' });
    expect(record['historyIngress']).toEqual({ archivePlan: { creates: [{ rustLibSessionId: 'inner' }] } });
  });

  it('skips a command record of the wrong shape with a warning naming its file and line, and imports the rest', async () => {
    const root = freshDir();
    const sessions = join(root, 'sessions');
    mkdirSync(sessions);
    writeFileSync(
      join(sessions, `${A}.session-control`),
      frame(lifecycle(A, {})) +
        frame(command(A, {})) +
        frame(command(A, { id: 'command-2', sequence: 'two', idempotencyId: 'message-2' })) +
        frame({ kind: 'session_command', recordedAt: '2026-07-24T00:00:01Z', value: { note: 'no id' } }) +
        frame(command(A, { id: 'command-3', sequence: 2, idempotencyId: 'message-3' })),
    );
    const url = `file:${join(freshDir(), 'data')}`;
    const ran = await run(['import-legacy', sessions, '--json', '-s', url]);
    expect(ran.code, ran.stderr).toBe(0);
    const summary = JSON.parse(ran.stdout) as Summary;
    expect(summary).toMatchObject({ sessionsImported: 1, commandsImported: 2 });
    const file = `${A}.session-control`;
    expect(summary.problems).toEqual([
      expect.objectContaining({ severity: 'warning', file, line: 3, message: expect.stringMatching(/session_command record .*skipped/) }),
      expect.objectContaining({ severity: 'warning', file, line: 4, message: expect.stringMatching(/session_command record .*skipped/) }),
    ]);
  });

  it('without --completed-list says how many completed sessions were left out and how to include them', async () => {
    const { sessions, completed } = writeLegacyData();
    const url = `file:${join(freshDir(), 'data')}`;
    const ran = await run(['import-legacy', sessions, '--json', '-s', url]);
    const summary = JSON.parse(ran.stdout) as Summary & { completedLeftOut?: number; completedNote?: string };
    expect(summary.receiptsImported).toBe(0);
    expect(summary.completedLeftOut).toBe(2);
    expect(summary.completedNote).toBe(`2 completed session(s) listed in ${completed} were left out; add --completed-list ${completed} to import them`);
    const human = await run(['import-legacy', sessions, '-s', `file:${join(freshDir(), 'data')}`]);
    expect(human.stdout).toContain(`add --completed-list ${completed} to import them`);

    const alone = join(freshDir(), 'sessions');
    mkdirSync(alone);
    const nothing = await run(['import-legacy', alone, '-s', `file:${join(freshDir(), 'data')}`]);
    expect(nothing.stdout).toMatch(/completed sessions were not imported: .*add --completed-list FILE to import them/);
  });

  it('exits 3 for a directory or completed list that is not there', async () => {
    const url = `file:${join(freshDir(), 'data')}`;
    expect((await run(['import-legacy', join(freshDir(), 'nope'), '-s', url])).code).toBe(3);
    const { sessions } = writeLegacyData();
    expect((await run(['import-legacy', sessions, '--completed-list', join(freshDir(), 'nope.txt'), '-s', url])).code).toBe(3);
  });
});

/** A legacy sessions directory with one good journal, of session A. */
function legacyDirectory(): string {
  const sessions = join(freshDir(), 'sessions');
  mkdirSync(sessions);
  writeFileSync(join(sessions, `${A}.session-control`), frame(lifecycle(A, {})));
  return sessions;
}

describe('import-legacy and files that are not regular files', () => {
  it('names a FIFO, a link to /dev/zero and a directory among the journals, and imports the others', async () => {
    const sessions = legacyDirectory();
    const fifo = '1c3f5a7e-2b4d-4c6e-8f01-23456789abcd.session-control';
    const zero = '5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9.session-control';
    const directory = '6e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9.session-control';
    mkfifo(join(sessions, fifo));
    symlinkSync('/dev/zero', join(sessions, zero));
    mkdirSync(join(sessions, directory));
    const url = `file:${join(freshDir(), 'data')}`;
    const ran = await run(['import-legacy', sessions, '--json', '-s', url], HANG);
    expect(ran.code, ran.stderr).toBe(1);
    const summary = JSON.parse(ran.stdout) as Summary;
    expect(summary.sessionsImported).toBe(1);
    const problemOf = (file: string) => summary.problems.find((problem) => problem.file === file);
    expect(problemOf(fifo)).toMatchObject({ severity: 'error', message: expect.stringMatching(/FIFO.*not a regular file.*not imported/) });
    expect(problemOf(zero)).toMatchObject({ severity: 'error', message: expect.stringMatching(/symbolic link, which is not followed/) });
    expect(problemOf(directory)).toMatchObject({ severity: 'error', message: expect.stringMatching(/is a directory, not a control journal/) });
    expect(ran.stderr).not.toMatch(/EISDIR/);
  });

  it('refuses a FIFO or a link to /dev/zero as the completed list (exit 2, named), and imports nothing', async () => {
    const sessions = legacyDirectory();
    const dir = freshDir();
    const fifo = join(dir, 'fifo.txt');
    mkfifo(fifo);
    const zero = join(dir, 'zero.txt');
    symlinkSync('/dev/zero', zero);
    const target = join(dir, 'data');
    const fromFifo = await run(['import-legacy', sessions, '--completed-list', fifo, '-s', `file:${target}`], HANG);
    expect(fromFifo.code).toBe(2);
    expect(fromFifo.stderr).toContain(`${fifo} is a FIFO (named pipe): not a regular file`);
    const fromZero = await run(['import-legacy', sessions, '--completed-list', zero, '-s', `file:${target}`], HANG);
    expect(fromZero.code).toBe(2);
    expect(fromZero.stderr).toContain(`${zero} is a character device`);
    expect(existsSync(target)).toBe(false);
  });
});
