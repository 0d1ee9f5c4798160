/** Moved to ../store/async-of.ts (the event log and the run repository use it too). @module */
export type { AsyncOf } from '../store/async-of';
