import { cloneJson, readJson, type JsonValue } from '../kernel/json.js';
import { jsonPathText } from '../kernel/json-walk.js';
import { SessionHistoryError } from './errors.js';

/** What a Standard Schema's `validate` returns: the value, or the problems found (each with a message and a path). */
type DataCheck<S> =
  | { readonly value: S; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined }> };

/**
 * A validator of the application's data: a Standard Schema (zod 4 schemas are ones) whose `validate` answers at
 * once, or a function that returns the value when it is valid and throws when it is not. It only checks: the data
 * is stored exactly as given, whatever the validator returns.
 */
export type DataValidator<S> =
  | {
      readonly '~standard': {
        readonly validate: (value: unknown) =>
          | { readonly value: S; readonly issues?: undefined }
          | {
              readonly issues: ReadonlyArray<{
                readonly message: string;
                readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
              }>;
            }
          | Promise<unknown>;
      };
    }
  | ((value: unknown) => S);

/** The check the decisions run on data before it is recorded: an error text naming the field, or undefined. */
export type DataCheckFn = (value: JsonValue) => { field: string; message: string } | undefined;

/** Turns the `validateData` option into the check the decisions run; refuses anything else. */
export function dataCheckOf(option: unknown): DataCheckFn | undefined {
  if (option === undefined) return undefined;
  if (typeof option === 'function') {
    return (value) => {
      try {
        option(value);
        return undefined;
      } catch (error) {
        return { field: 'data', message: error instanceof Error ? error.message : String(error) };
      }
    };
  }
  const standard = typeof option === 'object' && option !== null ? (option as { '~standard'?: { validate?: unknown } })['~standard'] : undefined;
  const validate = standard?.validate;
  if (typeof validate !== 'function') {
    throw SessionHistoryError.invalid('validateData: expected a Standard Schema (such as a zod schema) or a function', 'validateData');
  }
  return (value) => {
    const result = validate.call(standard, value) as DataCheck<unknown> | Promise<unknown>;
    if (result instanceof Promise) {
      result.catch(() => undefined);
      return { field: 'data', message: 'the validateData schema answered asynchronously; the service needs a synchronous one' };
    }
    const issue = result.issues?.[0];
    if (!issue) return undefined;
    const path = (issue.path ?? []).map((segment) => String(typeof segment === 'object' ? segment.key : segment));
    return { field: ['data', ...path].join('.'), message: issue.message };
  };
}

/**
 * The data a write records: `input` itself, or `input(current)` when it is a function; undefined when the write
 * leaves the data as it was. Refused (`invalid_request` naming the field) when it is not plain JSON or `check`
 * refuses it.
 */
export function nextData(input: unknown, current: JsonValue | null, check: DataCheckFn | undefined): JsonValue | undefined | SessionHistoryError {
  if (input === undefined) return undefined;
  let value: unknown = input;
  if (typeof input === 'function') {
    try {
      value = input(current === null ? null : cloneJson(current));
    } catch (error) {
      return SessionHistoryError.invalid(`data: the function threw: ${error instanceof Error ? error.message : String(error)}`, 'data');
    }
    if (value === undefined) return SessionHistoryError.invalid('data: the function returned undefined', 'data');
  }
  const read = readJson(value, { copy: true, refuseProtoKeys: true });
  if (read.problem !== undefined) {
    const where = jsonPathText('data', read.problem.path);
    return SessionHistoryError.invalid(`${where}: ${read.problem.message}`, where);
  }
  const refusal = check?.(read.value);
  if (refusal) return SessionHistoryError.invalid(`${refusal.field}: ${refusal.message}`, refusal.field);
  return read.value;
}
