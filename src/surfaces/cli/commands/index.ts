/**
 * Hand-written command families (those that are not one tool each): run, service, auth, … Each
 * family file exports a registrar; add it here.
 * @module
 */
import type { CliRegistrar } from '../context';
import { registerServiceHttp } from './service-http';

export const registrars: CliRegistrar[] = [registerServiceHttp];
