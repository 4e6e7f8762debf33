import { memoryStore } from '@sessionfold/core';
import { describeEventStoreConformance } from './index.js';

describeEventStoreConformance('memoryStore', () => memoryStore());
