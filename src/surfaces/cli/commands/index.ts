/**
 * Hand-written command families (those that are not one tool each): run, service, auth, … Each
 * family file exports a registrar; add it here.
 * @module
 */
import type { CliRegistrar } from '../context';
import { registerAttach } from './attach';
import { registerMcpCommands } from './mcp';
import { registerServiceHttp } from './service-http';
import { registerServiceMcp } from './service-mcp';
import { registerTui } from './tui';

export const registrars: CliRegistrar[] = [
  registerServiceHttp,
  registerTui,
  registerAttach,
  registerServiceMcp,
  registerMcpCommands,
];
