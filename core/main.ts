import { startServer, createPlatform } from './app.ts'
import { loadConfig } from './config.ts'
import { exitOnStopSignals } from './shutdown.ts'
import { logger } from './logger.ts'
import { ModuleDefinitionError } from './modules/validate.ts'
import type { Plugin } from './plugin.ts'

/** `npm start` (bin/server.ts): the service with `plugins` on DATABASE_URL, or on the embedded PostgreSQL in ./data. */
export async function serve(plugins: readonly Plugin[]) {
  const config = loadConfig()
  // Heard from here on: a signal during start-up shuts down once started (README, "Health and shutdown").
  const stopSignals = exitOnStopSignals(config.shutdown)
  const platform = await createPlatform(config)
  const running = await startServer(platform, plugins)
  // A brand-new database: the demo tenant has never had a key, so issue one and show it once.
  if (config.tenants.demo) {
    const existing = await platform.credentials.list('demo')
    if (!existing.length) {
      const { token } = await platform.credentials.create({ tenantId: 'demo', kind: 'api_key', name: 'demo key (printed at first start)', createdBy: { type: 'system', id: 'start-up', name: 'start-up' } })
      process.stdout.write(
        `\nCreated tenant "demo" with modules ${config.tenants.demo?.modules.join(', ')}.\n` +
          `To sign in at ${running.url}/sign-in, create a user first:\n` +
          `  npx records user create --tenant demo --username you --roles admin,safety-manager --password-stdin\n` +
          `Its API key (shown once, keep it):\n${token}\n\n`
      )
    }
  }
  logger.info(`records service listening on ${running.url}`, { database: platform.db.embedded ? 'embedded' : 'external' })
  process.stdout.write(`Listening on ${running.url}\n`)
  stopSignals.attach(running)
}

/** Start-up failed: the message (a bad module names its package and field), exit 1. */
export function startFailed(err: unknown): never {
  if (err instanceof ModuleDefinitionError) process.stderr.write(`Start-up stopped: ${err.message}\n`)
  else process.stderr.write(`Start-up failed: ${(err as Error)?.stack ?? err}\n`)
  process.exit(1)
}
