const narrowed = new Map([
  ['@sessionfold/core', new URL('../../../core/src/kernel/index.ts', import.meta.url).href],
  ['@sessionfold/sessionfile', new URL('./sessionfile-slice.ts', import.meta.url).href],
]);

export async function resolve(specifier, context, next) {
  const target = narrowed.get(specifier);
  return next(target ?? specifier, context);
}
