import { measureOpenHeap, type HeapTask } from './heap-measure.js';
import { loadSubjects } from './stores.js';

/** Child-process entry of `measureOpenHeapInChild`: opens the named store, reads the heap, reports over IPC. */
async function main(): Promise<void> {
  const task = JSON.parse(process.argv[2] ?? '{}') as HeapTask;
  const [loaded] = await loadSubjects([task.subject]);
  if (!loaded?.subject) throw new Error(`bench: store ${task.subject} is not available`);
  process.send?.({ result: await measureOpenHeap(loaded.subject, task.dir) });
}

main().catch((error: unknown) => {
  process.send?.({ error: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
});
