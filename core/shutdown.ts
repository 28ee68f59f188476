import type { Server } from 'node:http'
import { logger } from './logger.ts'
import { stopTracing } from './telemetry/tracing.ts'

/**
 * The instance's drain state, one per platform: `begin()` is called once, by the server's
 * close() (a SIGTERM or SIGINT, core/main.ts). From then readiness answers 503, responses
 * close their connection, a bulk call takes no more rows and running jobs are handed back
 * (core/jobs/index.ts). Work reads `signal`; nothing else may begin it.
 */
export class Shutdown {
  private readonly controller = new AbortController()
  readonly signal = this.controller.signal

  get draining(): boolean {
    return this.signal.aborted
  }

  begin(reason: string) {
    if (!this.draining) this.controller.abort(reason)
  }
}

/**
 * Closes the listener at once and lets the requests under way finish until `deadline` (epoch ms).
 * Keep-alive connections close as soon as they are idle (Node closes the idle ones on close();
 * the busy ones are looked at again every 100 ms, and their responses say `Connection: close`).
 * At the deadline the rest are cut. Resolves with the number of connections cut.
 */
export async function closeListener(server: Server, deadline: number): Promise<{ cut: number }> {
  if (!server.listening) return { cut: 0 }
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  const idle = setInterval(() => server.closeIdleConnections(), 100)
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>(
    (resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, deadline - Date.now())))
  )
  try {
    if ((await Promise.race([closed, late])) !== 'late') return { cut: 0 }
    const cut = await new Promise<number>((resolve) => server.getConnections((_err, n) => resolve(n ?? 0)))
    server.closeAllConnections()
    await closed
    return { cut }
  } finally {
    clearInterval(idle)
    clearTimeout(timer)
  }
}

/** What a stop signal stops: the running server (core/app.ts startServer). */
export interface Stoppable {
  close(): Promise<void>
}

/** Time past the drain deadline for closing pools and the embedded PostgreSQL before the process exits regardless. */
export const closeReserveMs = 3_000

/**
 * SIGTERM and SIGINT, from the moment the service starts starting: the first drains the
 * server (`close()`, at once, or as soon as start-up is done) and exits 0 when everything
 * stopped; a second signal, or `readinessDelaySeconds` + `deadlineSeconds` + 3 s without the
 * drain done, exits 1 at once (the embedded PostgreSQL this process started is still stopped, by
 * core/main.ts on exit; jobs still running are found by their expired lock). Each step goes to the log.
 */
/** A repeat of the first stop signal this soon is the same request delivered twice (see onSignal). */
export const repeatWindowMs = 1000

export function exitOnStopSignals(config: { deadlineSeconds: number; readinessDelaySeconds: number }): {
  attach(server: Stoppable): void
} {
  let server: Stoppable | undefined
  let signalled: string | undefined
  let signalledAt = 0
  const exitNow = (message: string, fields: Record<string, unknown>) => {
    logger.error(message, fields)
    process.exit(1)
  }
  const drain = (target: Stoppable) =>
    target.close().then(
      async () => {
        // The spans still buffered go to the collector first (a bounded wait).
        await stopTracing()
        logger.info('shut down cleanly; exiting', { code: 0 })
        process.exit(0)
      },
      (err) => exitNow('shutdown failed; exiting', { error: (err as Error)?.stack ?? String(err), code: 1 })
    )
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      // The same signal twice within a second is one request delivered twice, not an impatient
      // operator: Ctrl-C signals npm and node together and npm forwards its copy (1-4 ms apart),
      // and a supervisor that signals the whole process group (systemd's KillMode=control-group) does the same.
      if (signal === signalled && Date.now() - signalledAt < repeatWindowMs)
        return logger.debug(`received ${signal} again at once: the same request, already under way`, { signal })
      return exitNow(`received ${signal} again: exiting now, work under way unfinished`, { signal, code: 1 })
    }
    signalled = signal
    signalledAt = Date.now()
    logger.info(`received ${signal}: shutting down`, { signal, deadlineSeconds: config.deadlineSeconds })
    const limitMs = (config.readinessDelaySeconds + config.deadlineSeconds) * 1000 + closeReserveMs
    setTimeout(
      () =>
        exitNow('the shutdown deadline passed: exiting now, work under way unfinished', {
          deadlineSeconds: config.deadlineSeconds,
          readinessDelaySeconds: config.readinessDelaySeconds,
          code: 1
        }),
      limitMs
    ).unref()
    if (server) void drain(server)
    else logger.info('still starting: the shutdown follows once started')
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  return {
    attach(target) {
      server = target
      if (signalled) void drain(target)
    }
  }
}
