import { startServer, createPlatform } from './app.ts'
import { loadConfig } from './config.ts'
import { exitOnStopSignals } from './shutdown.ts'
import { logger, logProcessWarnings } from './logger.ts'
import type { Plugin } from './plugin.ts'

/** `npm start` (bin/server.ts): the service with `plugins` on DATABASE_URL, or on the embedded PostgreSQL in ./data. */
export async function serve(plugins: readonly Plugin[]) {
  logProcessOutput()
  const config = loadConfig()
  // Heard from here on: a signal during start-up shuts down once started (README, "Health and shutdown").
  const stopSignals = exitOnStopSignals(config.shutdown)
  const platform = await createPlatform(config, plugins)
  // However the process ends (a failed start, a second signal, the deadline, a fatal error), the embedded
  // PostgreSQL it started stops with it: synchronously (pg_ctl), and not again after a clean close.
  process.once('exit', () => void platform.db.embedded?.stop())
  const running = await startServer(platform, plugins)
  // A brand-new database: the demo tenant has never had a key, so issue one and show it once.
  if (config.tenants.demo) {
    const existing = await platform.credentials.list('demo')
    if (!existing.length) {
      const { token, credential } = await platform.credentials.create({
        tenantId: 'demo',
        kind: 'api_key',
        name: 'demo key (printed at first start)',
        createdBy: { type: 'system', id: 'start-up', name: 'start-up' }
      })
      printFirstKey({ token, id: credential.id, modules: config.tenants.demo?.modules ?? [], url: running.url })
    }
  }
  logger.info(`records service listening on ${running.url}`, {
    url: running.url,
    database: platform.db.embedded ? 'embedded' : 'external'
  })
  tellOperator(`Listening on ${running.url}\n`, { msg: `Listening on ${running.url}`, url: running.url })
  stopSignals.attach(running)
}

/**
 * What the service tells the operator on stdout whatever the log level (stderr is the log):
 * that it listens, and the demo tenant's first API key, the one secret it ever prints and
 * never into the log (stderr, `log.file`). As text on a terminal; otherwise (a supervisor,
 * a container) one JSON line shaped like a log line (README, "Logs").
 */
function tellOperator(text: string, line: { msg: string } & Record<string, unknown>) {
  if (process.stdout.isTTY) process.stdout.write(text)
  else
    process.stdout.write(
      JSON.stringify({ level: 'info', time: new Date().toISOString(), pid: process.pid, ...line }) + '\n'
    )
}

function printFirstKey(o: { token: string; id: string; modules: readonly string[]; url: string }) {
  tellOperator(
    `\nCreated tenant "demo" with modules ${o.modules.join(', ')}.\n` +
      `To sign in at ${o.url}/sign-in, create a user first:\n` +
      `  npx records user create --tenant demo --username you --roles admin,safety-manager --password-stdin\n` +
      `Its API key (shown once, keep it):\n${o.token}\n\n`,
    {
      msg: 'created tenant demo and its first API key (shown once, keep it)',
      tenant: 'demo',
      modules: o.modules,
      credentialId: o.id,
      apiKey: o.token
    }
  )
}

/** Everything the process prints is a log line: Node's warnings, and an error nothing caught (then exit 1). */
function logProcessOutput() {
  logProcessWarnings()
  const fatal = (err: unknown, origin: string) => {
    logger.fatal(`${origin}: ${(err as Error)?.message ?? String(err)}`, {
      error: (err as Error)?.stack ?? String(err)
    })
    process.exit(1)
  }
  process.on('uncaughtException', (err, origin) =>
    fatal(err, origin === 'unhandledRejection' ? 'unhandled rejection' : 'uncaught exception')
  )
}

/** Start-up failed: one log line with the message, exit 1. (A bad module package does not stop it: it is disabled alone.) */
export function startFailed(err: unknown): never {
  logger.fatal(`Start-up failed: ${(err as Error)?.message ?? String(err)}`, {
    error: (err as Error)?.stack ?? String(err)
  })
  process.exit(1)
}
