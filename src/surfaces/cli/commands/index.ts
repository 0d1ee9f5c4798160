/**
 * Hand-written command families (those that are not one tool each): run, service, auth, … Each
 * family file exports a registrar; add it here.
 * @module
 */
import type { CliRegistrar } from '../context';
import { registerAcp } from './acp';
import { registerAttach } from './attach';
import { registerAuthCommands } from './auth';
import { registerDoctor } from './doctor';
import { registerMcpCommands } from './mcp';
import { registerRun } from './run';
import { registerServiceHttp } from './service-http';
import { registerServiceMcp } from './service-mcp';
import { registerTrust } from './trust';
import { registerTui } from './tui';
import { registerUpdateProvidersCommand } from './update-providers';
import { registerWeb } from './web';

export const registrars: CliRegistrar[] = [
  registerRun,
  registerServiceHttp,
  registerTui,
  registerAttach,
  registerAuthCommands,
  registerUpdateProvidersCommand,
  registerServiceMcp,
  registerMcpCommands,
  registerAcp,
  registerWeb,
  registerDoctor,
  registerTrust,
];
