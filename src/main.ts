import { ConfigError, loadConfig } from './config.js';
import { startGateway } from './gateway.js';
import { createLogger } from './logger.js';
import { installLastResort } from './server/last-resort.js';
import { watchEventLoopStalls } from './server/stall-watch.js';
import { startTracing, type Tracing } from './server/tracing.js';

/** After the drain (MESH_DRAIN_S), closing the store, NATS and the listener may take this long before the process gives up. */
const CLOSE_AFTER_DRAIN_MS = 10_000;

async function main(): Promise<void> {
  let config;
  let tracing: Tracing | undefined;
  let logger;
  try {
    config = loadConfig();
    logger = createLogger(config.logLevel, config.logFormat);
    // Whatever escapes every guard is logged and counted (mesh_uncaught_total), never the process's end.
    installLastResort(logger);
    // A stall is logged, so a lost lease or a late reply is told from a slow NATS (docs/operations.md).
    watchEventLoopStalls(logger);
    // Before the gateway starts, so its first statements and messages are traced too.
    tracing = startTracing(process.env, logger);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`mesh-gateway: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const gateway = await startGateway(config, { logger });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    // Always longer than the drain, so in-flight work gets its MESH_DRAIN_S.
    const SHUTDOWN_GRACE_MS = config.drainSeconds * 1000 + CLOSE_AFTER_DRAIN_MS;
    setTimeout(() => {
      logger.error({ graceMs: SHUTDOWN_GRACE_MS }, 'shutdown took too long; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    gateway.stop().then(
      async () => {
        await tracing?.stop();
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error) => {
  console.error('mesh-gateway failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
