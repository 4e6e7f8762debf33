import { describe, expect, it } from 'vitest';
import { Positions } from './positions.js';

describe('Positions', () => {
  it('a released range that is the last one reserved is handed out again', () => {
    const positions = new Positions(10);
    const start = positions.reserve(3);
    expect(positions.watermark).toBe(10);
    positions.release(start);
    expect(positions.last).toBe(10);
    expect(positions.watermark).toBe(10);
    expect(positions.reserve(1)).toBe(11);
  });

  it('a released range below a later reservation only stops holding the watermark back', () => {
    const positions = new Positions(0);
    const first = positions.reserve(2);
    const second = positions.reserve(1);
    positions.release(first);
    expect(positions.last).toBe(3);
    expect(positions.watermark).toBe(2);
    positions.settle(second);
    expect(positions.watermark).toBe(3);
  });
});
