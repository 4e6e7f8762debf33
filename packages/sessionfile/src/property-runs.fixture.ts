/** Property-test runs: `SESSIONFOLD_PROPERTY_RUNS` when set (a long run is one variable away), else `fallback`. */
export const propertyRuns = (fallback: number): number => Number(process.env['SESSIONFOLD_PROPERTY_RUNS'] ?? fallback);
