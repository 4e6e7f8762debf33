import * as nodeFs from 'node:fs/promises';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile, symlink, lstat, readlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionfoldError } from '@sessionfold/core/kernel';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AtomicWriteDirectorySyncError, DestinationIsDirectoryError, type AtomicWriteFs } from '@sessionfold/atomic-write';
import { SCHEMA_VERSION, validatePayload, type SessionSnapshot } from './envelope.js';
import { SessionFileError, SessionFileInvalidError, SessionFileIoError, WAYS_OUT } from './errors.js';
import { loadSnapshot, newSnapshot, saveSnapshot } from './snapshot-file.js';
import { startPythonDumps, type PythonDumps } from './python-dumps.fixture.js';
import { IDENTITY, fullSnapshot, versionOneText } from './snapshots.fixture.js';

const posix = process.platform !== 'win32';
if (!posix) console.info('sessionfile: the tests of symbolic links and directory sync are skipped: they need POSIX');
let dir: string;
let python: PythonDumps;

beforeAll(() => {
  python = startPythonDumps();
});
afterAll(async () => {
  await python.close();
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfile-snapshot-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes `payload` as a session file and returns the error loading it raises. */
async function refusal(payload: unknown, name = 'run.json'): Promise<SessionFileInvalidError> {
  const path = join(dir, name);
  const bytes = typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload);
  await writeFile(path, bytes);
  const error = await loadSnapshot(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SessionFileInvalidError);
  expect(error).toBeInstanceOf(SessionfoldError);
  const invalid = error as SessionFileInvalidError;
  expect(invalid.code).toBe('session_file_invalid');
  expect(invalid.path).toBe(path);
  expect(invalid.message).toContain(path);
  return invalid;
}

function payloadOf(snapshot: SessionSnapshot, version = SCHEMA_VERSION): Record<string, unknown> {
  return { version, ...snapshot };
}

describe('saveSnapshot and loadSnapshot', () => {
  it('round-trips every kind of record, the legacy loop and the version 2 continuation', async () => {
    const path = join(dir, 'run.json');
    const snapshot = fullSnapshot();
    await saveSnapshot(path, snapshot);
    const loaded = await loadSnapshot(path);
    expect(loaded).toEqual(snapshot);
    expect(loaded?.loop.runtime).toEqual({ pending: [{ kind: 'approval', call_id: 'call-3' }], usage: { total: 168 } });
    expect(loaded?.loop.scheduler).toEqual({ next: 'critic', round: 3 });
  });

  it('writes schema version 2 first, then the envelope in a fixed order, as Python would write it', async () => {
    const path = join(dir, 'run.json');
    await saveSnapshot(path, fullSnapshot());
    const text = await readFile(path, 'utf8');
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['version', 'identity', 'turns', 'transcript', 'loop', 'compactions']);
    expect(parsed['version']).toBe(2);
    expect(text).toBe(await python.dumps(parsed));
    expect(text).toContain('\\u2014 \\u2713'); // non-ASCII is escaped, so the file is pure ASCII
    expect(/^[\x0a\x20-\x7e]*$/.test(text)).toBe(true);
  });

  it('always writes the current version, whatever version key the argument carries', async () => {
    const path = join(dir, 'run.json');
    for (const version of [1, 3, 'two', null]) {
      await saveSnapshot(path, { ...fullSnapshot(), version } as SessionSnapshot);
      const parsed = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
      expect(parsed['version']).toBe(2);
      expect(Object.keys(parsed)).toEqual(['version', 'identity', 'turns', 'transcript', 'loop', 'compactions']);
      expect(await loadSnapshot(path)).toEqual(fullSnapshot());
    }
  });

  it('saves and loads a fresh snapshot with empty records as [] and {}', async () => {
    const path = join(dir, 'run.json');
    await saveSnapshot(path, newSnapshot(IDENTITY));
    const text = await readFile(path, 'utf8');
    expect(text).toContain('"turns": [],\n  "transcript": [],\n  "loop": {},\n  "compactions": 0\n}');
    expect(await loadSnapshot(path)).toEqual(newSnapshot(IDENTITY));
  });

  it('reads a version 1 file as a turn boundary without a continuation', async () => {
    const path = join(dir, 'v1.json');
    await writeFile(path, versionOneText());
    const loaded = await loadSnapshot(path);
    expect(loaded?.loop).toEqual({ turn_count: 1, phase: 'intro' });
    expect(loaded?.turns[0]?.output).toBe('hello');
    expect(loaded?.identity).toEqual(IDENTITY);
    await saveSnapshot(path, loaded!);
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({ version: 2, loop: { turn_count: 1, phase: 'intro' } });
  });

  it('re-saves a file Python wrote byte for byte, keeping its key order inside opaque objects', async () => {
    const path = join(dir, 'python.json');
    const payload = payloadOf(fullSnapshot());
    (payload['loop'] as Record<string, unknown>)['runtime'] = { zeta: 1, alpha: { ü: [0.5, 1e-7, 3] } };
    const pythonBytes = await python.dumps(payload);
    await writeFile(path, pythonBytes);
    await saveSnapshot(path, (await loadSnapshot(path))!);
    expect(await readFile(path, 'utf8')).toBe(pythonBytes);
  });

  it('returns undefined for a missing file and creates nothing, not even its directory', async () => {
    const path = join(dir, 'missing', 'run.json');
    expect(await loadSnapshot(path)).toBeUndefined();
    expect(await readdir(dir)).toEqual([]);
  });

  it('reports an unreadable file as an I/O error naming the path', async () => {
    const path = join(dir, 'a-directory');
    await mkdir(path);
    const error = await loadSnapshot(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionFileIoError);
    expect(error).toBeInstanceOf(SessionFileError);
    expect(error).not.toBeInstanceOf(SessionFileInvalidError);
    expect((error as SessionFileIoError).code).toBe('session_file_io');
    expect((error as SessionFileIoError).path).toBe(path);
    expect((error as SessionFileIoError).operation).toBe('read');
    expect((error as SessionFileIoError).message).toContain(path);
    expect((error as SessionFileIoError).cause).toMatchObject({ code: 'EISDIR' });
  });
});

describe('a session file that is not a valid snapshot', () => {
  it('is refused when it is not JSON, naming the file and the ways out', async () => {
    const error = await refusal('{"version": 2, ');
    expect(error.message).toContain('is not valid JSON');
    expect(error.message).toContain(WAYS_OUT);
    expect(error.cause).toBeInstanceOf(SyntaxError);
    expect((await refusal('', 'empty.json')).message).toContain('is not valid JSON');
    expect((await refusal('{"version": NaN}', 'nan.json')).message).toContain('is not valid JSON');
  });

  it('is refused when it is not UTF-8', async () => {
    const error = await refusal(Buffer.concat([Buffer.from('{"version": "'), Buffer.from([0xff]), Buffer.from('"}')]));
    expect(error.message).toContain('is not valid JSON');
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  it('is refused without the ways out when it is JSON but not an object', async () => {
    for (const payload of ['[]', '"text"', '42', 'null']) {
      const error = await refusal(payload);
      expect(error.message).toContain('expected a JSON object');
      expect(error.message).not.toContain('Delete it');
    }
  });

  it('is refused with both versions named when its schema version is unknown', async () => {
    const error = await refusal(payloadOf(fullSnapshot(), 3));
    expect(error.message).toContain('schema version 3');
    expect(error.message).toContain(`writes schema version ${SCHEMA_VERSION}`);
    expect(error.message).toContain(WAYS_OUT);
  });

  const fields = ['version', 'identity', 'turns', 'transcript', 'loop', 'compactions'] as const;
  for (const field of fields) {
    it(`is refused when the envelope field "${field}" is missing`, async () => {
      const payload = payloadOf(fullSnapshot());
      delete payload[field];
      const error = await refusal(payload);
      expect(error.message).toContain(`missing the envelope field "${field}"`);
      expect(error.message).toContain(WAYS_OUT);
    });

    it(`is refused when the envelope field "${field}" has the wrong type`, async () => {
      const payload = payloadOf(fullSnapshot());
      payload[field] = field === 'turns' || field === 'transcript' ? { not: 'a list' } : 'mistyped';
      const error = await refusal(payload);
      expect(error.message).toContain(`mistyped envelope field "${field}"`);
      expect(error.message).toContain(WAYS_OUT);
    });
  }

  it('is refused when a null stands where the envelope expects an object', async () => {
    const payload = payloadOf(fullSnapshot());
    payload['loop'] = null;
    expect((await refusal(payload)).message).toContain('mistyped envelope field "loop": expected an object, found null');
  });

  const unknowns: [string, (p: Record<string, any>) => void, string][] = [
    ['the envelope', (p) => (p['extra'] = 1), 'unknown envelope field "extra"'],
    ['the identity', (p) => (p['identity'].colour = 'blue'), 'unknown field "colour" in identity'],
    ['a turn', (p) => (p['turns'][1].mood = 'calm'), 'unknown field "mood" in turns[1]'],
    ['a tool call', (p) => (p['turns'][0].tool_calls[2].retries = 1), 'unknown field "retries" in turns[0].tool_calls[2]'],
    ['a transcript entry', (p) => (p['transcript'][3].extra = true), 'unknown field "extra" in transcript[3]'],
    ['the legacy loop', (p) => (p['loop'].phase_name = 'x'), 'unknown field "phase_name" in loop'],
  ];
  for (const [where, mutate, text] of unknowns) {
    it(`is refused when ${where} has an unknown field`, async () => {
      const payload = payloadOf(fullSnapshot());
      mutate(payload);
      const error = await refusal(payload);
      expect(error.message).toContain(text);
      expect(error.message).toContain(WAYS_OUT);
    });
  }

  const counters: [string, (p: Record<string, any>, v: unknown) => void, string][] = [
    ['compactions', (p, v) => (p['compactions'] = v), 'compactions'],
    ['loop.turn_count', (p, v) => (p['loop'].turn_count = v), 'loop.turn_count'],
    ['loop.phase_index', (p, v) => (p['loop'].phase_index = v), 'loop.phase_index'],
    ['a usage token count', (p, v) => (p['turns'][0].usage.output_tokens = v), 'turns[0].usage.output_tokens'],
  ];
  for (const [name, set, where] of counters) {
    for (const bad of [-1, 1.5]) {
      it(`is refused when ${name} is ${bad}`, async () => {
        const payload = payloadOf(fullSnapshot());
        set(payload, bad);
        const error = await refusal(payload);
        expect(error.message).toContain(`invalid value at ${where}: expected a non-negative integer, found ${bad}`);
        expect(error.message).toContain(WAYS_OUT);
      });
    }
  }

  it('is refused when a record field is missing or mistyped, naming where', async () => {
    const missing = payloadOf(fullSnapshot());
    delete (missing['turns'] as Record<string, unknown>[])[0]!['speaker'];
    expect((await refusal(missing)).message).toContain('missing the field "speaker" in turns[0]');

    const mistyped = payloadOf(fullSnapshot());
    (mistyped['identity'] as Record<string, unknown>)['participants'] = 'writer';
    expect((await refusal(mistyped)).message).toContain('invalid value at identity.participants: expected an array, found "writer"');

    const unknownType = payloadOf(fullSnapshot());
    (unknownType['transcript'] as Record<string, unknown>[])[0]!['type'] = 'shout';
    expect((await refusal(unknownType)).message).toContain('invalid value at transcript[0].type: expected one of "user-message"');

    const badPhase = payloadOf(fullSnapshot());
    (badPhase['loop'] as Record<string, unknown>)['phase'] = 7;
    expect((await refusal(badPhase)).message).toContain('invalid value at loop.phase: expected a string, found 7');
  });

  for (const field of ['runtime', 'scheduler']) {
    it(`is refused when a version 1 file holds loop.${field}`, async () => {
      const payload = JSON.parse(versionOneText()) as Record<string, any>;
      payload['loop'][field] = {};
      const error = await refusal(payload);
      expect(error.message).toContain(`"loop.${field}", which only schema version 2 may hold`);
      expect(error.message).toContain(WAYS_OUT);
    });
  }

  it('is refused when a version 2 continuation is not an object', async () => {
    const payload = payloadOf(fullSnapshot());
    (payload['loop'] as Record<string, unknown>)['runtime'] = [1];
    expect((await refusal(payload)).message).toContain('invalid value at loop.runtime: expected an object, found an array');
  });
});

describe('saveSnapshot refusals and failures', () => {
  it('never writes a snapshot the reader would refuse, and leaves the previous file intact', async () => {
    const path = join(dir, 'run.json');
    await saveSnapshot(path, fullSnapshot());
    const before = await readFile(path, 'utf8');
    const bad = [
      { ...fullSnapshot(), compactions: -1 },
      { ...fullSnapshot(), extra: true } as SessionSnapshot,
      { ...fullSnapshot(), loop: { turn_count: Number.NaN } },
      { ...fullSnapshot(), loop: { runtime: { when: new Date(0) } } } as unknown as SessionSnapshot,
      { ...fullSnapshot(), loop: { phase: undefined } } as unknown as SessionSnapshot,
    ];
    for (const snapshot of bad) {
      const error = await saveSnapshot(path, snapshot).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SessionFileInvalidError);
      expect((error as SessionFileInvalidError).path).toBe(path);
    }
    expect(await readFile(path, 'utf8')).toBe(before);
    expect(await readdir(dir)).toEqual(['run.json']);
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a string', 'snapshot'],
    ['an array', []],
  ])('refuses %s instead of a snapshot with SessionFileInvalidError, writing nothing', async (_label, snapshot) => {
    const path = join(dir, 'run.json');
    const error = await saveSnapshot(path, snapshot as unknown as SessionSnapshot).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionFileInvalidError);
    expect((error as SessionFileInvalidError).path).toBe(path);
    expect(await readdir(dir)).toEqual([]);
  });

  it('lands at the path it was given, owner-only, creating parents and leaving nothing else', async () => {
    const path = join(dir, 'nested', 'deeper', 'run.json');
    await saveSnapshot(path, fullSnapshot());
    await saveSnapshot(path, newSnapshot(IDENTITY));
    expect(await readdir(join(dir, 'nested', 'deeper'))).toEqual(['run.json']);
    expect(await loadSnapshot(path)).toEqual(newSnapshot(IDENTITY));
    if (posix) {
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect((await stat(join(dir, 'nested'))).mode & 0o777).toBe(0o700);
    }
  });

  it('refuses a directory at the destination and leaves it alone', async () => {
    const path = join(dir, 'run.json');
    await mkdir(path);
    const error = await saveSnapshot(path, fullSnapshot()).catch((e: unknown) => e);
    // The writer's own error, passed on as it is: its code says what happened.
    expect(error).toBeInstanceOf(DestinationIsDirectoryError);
    expect(error).toMatchObject({ code: 'destination_is_directory', path });
    expect((await stat(path)).isDirectory()).toBe(true);
    expect(await readdir(dir)).toEqual(['run.json']);
  });

  it.skipIf(!posix)('does not follow a symlink squatting on its temporary name', async () => {
    const path = join(dir, 'run.json');
    const victim = join(dir, 'victim');
    await writeFile(victim, 'untouched');
    let squat = '';
    const fs = wrapFs({
      open: async (p, flags) => {
        if (flags === 'wx' && !squat) {
          squat = p;
          await symlink(victim, p);
        }
      },
    });
    await saveSnapshot(path, fullSnapshot(), { fs });
    expect(await readFile(victim, 'utf8')).toBe('untouched');
    expect(await readlink(squat)).toBe(victim);
    expect((await lstat(squat)).isSymbolicLink()).toBe(true);
    expect(await loadSnapshot(path)).toEqual(fullSnapshot());
  });

  for (const [step, operation, fs] of [
    ['write', 'write', () => wrapFs({ write: fail })],
    ['rename', 'replace', () => wrapFs({ rename: fail })],
  ] as const) {
    it(`keeps the previous snapshot and removes only its temporary file after an injected ${step} failure`, async () => {
      const path = join(dir, 'run.json');
      await saveSnapshot(path, newSnapshot(IDENTITY));
      await writeFile(join(dir, 'neighbour'), 'kept');
      const error = await saveSnapshot(path, fullSnapshot(), { fs: fs() }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SessionFileIoError);
      expect(error).toMatchObject({ code: 'session_file_io', operation });
      expect((error as SessionFileIoError).cause).toMatchObject({ code: 'ENOSPC' });
      expect(await loadSnapshot(path)).toEqual(newSnapshot(IDENTITY));
      expect((await readdir(dir)).sort()).toEqual(['neighbour', 'run.json']);
    });
  }

  it.skipIf(!posix)('passes on the writer’s directory-sync failure, with the new snapshot already in place', async () => {
    const path = join(dir, 'run.json');
    const fs = wrapFs({ open: async (_, flags) => (flags === 'r' ? fail() : undefined) });
    const error = await saveSnapshot(path, fullSnapshot(), { fs }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtomicWriteDirectorySyncError);
    expect(error).toMatchObject({ code: 'atomic_write_directory_sync', path, directory: dir });
    expect(await loadSnapshot(path)).toEqual(fullSnapshot());
  });
});

describe('validatePayload', () => {
  it('returns the payload it was given, typed, when it is valid', () => {
    const payload = payloadOf(fullSnapshot());
    expect(validatePayload(payload, 'x.json')).toBe(payload);
  });

  it('names the path it was given in a refusal', () => {
    expect(() => validatePayload({}, '/somewhere/run.json')).toThrow(/^Session file \/somewhere\/run\.json is missing/);
  });
});

const fail = async (): Promise<void> => {
  throw Object.assign(new Error('injected: no space left'), { code: 'ENOSPC' });
};

/** The real file system with hooks run before `open`, `rename` and the file handle's `writeFile`. */
function wrapFs(hooks: { open?: (path: string, flags: string) => Promise<void>; rename?: () => Promise<void>; write?: () => Promise<void> }): AtomicWriteFs {
  const real = nodeFs as unknown as AtomicWriteFs;
  return {
    mkdir: (p, o) => real.mkdir(p, o),
    lstat: (p) => real.lstat(p),
    unlink: (p) => real.unlink(p),
    rename: async (a, b) => {
      await hooks.rename?.();
      await real.rename(a, b);
    },
    open: async (p, flags, mode) => {
      await hooks.open?.(p, flags);
      const handle = await real.open(p, flags, mode);
      return {
        writeFile: async (data) => {
          await hooks.write?.();
          await handle.writeFile(data);
        },
        chmod: (m) => handle.chmod(m),
        sync: () => handle.sync(),
        close: () => handle.close(),
      };
    },
  };
}
