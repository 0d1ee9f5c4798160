/**
 * Field schemas several sections share.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const toolList = lazy(() => z.array(z.string().min(1)));
export const selector = lazy(() => z.string().min(1).describe('A model selector, <provider>/<model>.'));
