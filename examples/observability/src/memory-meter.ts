import type { Attributes, MeterLike } from './metrics-observers.js';

/** One instrument's readings: a counter's sum, a histogram's count, sum and largest value. */
export interface Reading {
  kind: 'counter' | 'histogram';
  unit: string;
  count: number;
  sum: number;
  max: number;
}

/**
 * A meter that keeps every instrument's totals in memory, for printing and tests; in production pass
 * OpenTelemetry's meter instead. Attributes are accepted and summed over.
 */
export class MemoryMeter implements MeterLike {
  readonly #readings = new Map<string, Reading>();

  createCounter(name: string, options: { unit?: string } = {}): { add(value: number, attributes?: Attributes): void } {
    const reading = this.#instrument(name, 'counter', options.unit);
    return { add: (value) => this.#take(reading, value) };
  }

  createHistogram(name: string, options: { unit?: string } = {}): { record(value: number, attributes?: Attributes): void } {
    const reading = this.#instrument(name, 'histogram', options.unit);
    return { record: (value) => this.#take(reading, value) };
  }

  /** Every instrument by name, in the order they were made. */
  readings(): ReadonlyMap<string, Readonly<Reading>> {
    return this.#readings;
  }

  #instrument(name: string, kind: Reading['kind'], unit = ''): Reading {
    const reading: Reading = { kind, unit, count: 0, sum: 0, max: 0 };
    this.#readings.set(name, reading);
    return reading;
  }

  #take(reading: Reading, value: number): void {
    reading.count++;
    reading.sum += value;
    reading.max = Math.max(reading.max, value);
  }
}
