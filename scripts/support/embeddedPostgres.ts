// Moved to src/ so the installed `chargeonce chaos` command can start it too; kept here for the
// scripts and tests that import it from this path.
export { startEmbeddedPostgres } from '../../src/cli/startEmbeddedPostgres.js';
export type { EmbeddedServer } from '../../src/cli/startEmbeddedPostgres.js';
