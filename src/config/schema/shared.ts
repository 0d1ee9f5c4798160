/**
 * Field schemas several sections share.
 * @module
 */
import { z } from 'zod';

export const toolList = z.array(z.string().min(1));
export const selector = z.string().min(1).describe('A model selector, <provider>/<model>.');
