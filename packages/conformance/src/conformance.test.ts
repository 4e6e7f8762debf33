import { memoryStore } from '@sessionfold/core/kernel';
import { describeEventStoreConformance } from './index.js';

describeEventStoreConformance('memoryStore', () => memoryStore(), {
  withClock: (clock) => memoryStore({ clock }),
});
