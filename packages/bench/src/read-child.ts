import { measureRead, type ChildTask } from './read-measure.js';
import { loadSubjects } from './stores.js';

/** Child-process entry of `measureReadInChild`: opens the named store, measures the read, reports over IPC. */
async function main(): Promise<void> {
  const task = JSON.parse(process.argv[2] ?? '{}') as ChildTask;
  const [loaded] = await loadSubjects([task.subject]);
  if (!loaded?.subject) throw new Error(`bench: store ${task.subject} is not available`);
  const store = await loaded.subject.open(task.dir);
  try {
    const result = await measureRead(store, task.mode);
    process.send?.({ result });
  } finally {
    await store.close();
  }
}

main().catch((error: unknown) => {
  process.send?.({ error: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
});
