export { FULL, QUICK, TINY, type Volumes } from './config.js';
export { runBench, describeMachine, type BenchOptions } from './run.js';
export type { BenchReport, Machine, Row, RowStatus, TargetResult } from './report.js';
export { SCENARIOS } from './scenarios/index.js';
export { SUBJECTS, loadSubjects, type Capability, type StoreSubject, type SubjectEntry } from './stores.js';
export { TARGETS, checkTargets, type Target } from './targets.js';
export { formatReport, formatRows, formatTargets } from './table.js';
export { quantile, summarize, perSecond, ratio } from './stats.js';
export { parseArgs } from './cli-args.js';
