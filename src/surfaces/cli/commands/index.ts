/**
 * Hand-written command families (those that are not one tool each): run, service, auth, … Each
 * family file exports a registrar; add it here.
 * @module
 */
import type { CliRegistrar } from '../context';
import { registerMcpCommands } from './mcp';
import { registerServiceHttp } from './service-http';
import { registerServiceMcp } from './service-mcp';

export const registrars: CliRegistrar[] = [registerServiceHttp, registerServiceMcp, registerMcpCommands];
