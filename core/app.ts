import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { feathers } from '@feathersjs/feathers'
import { koa, rest } from '@feathersjs/koa'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import type { Middleware } from 'koa'
import { CredentialStore } from './auth/credentials.ts'
import { SessionStore } from './auth/sessions.ts'
import { UserDirectory } from './auth/users.ts'
import { createLimiter } from './limits/limiter.ts'
import { createStorage } from './storage/index.ts'
import { identify, rejectBadCredentials } from './http/identify.ts'
import { rateLimit, requestBudget } from './http/rate-limit.ts'
import type { AppConfig } from './config.ts'
import type { App, Platform } from './declarations.ts'
import { openDatabase, platformSecret } from './db/index.ts'
import { authenticate } from './hooks/authenticate.ts'
import { fromHttp } from './hooks/call-params.ts'
import { acceptJsonData } from './hooks/json-data.ts'
import { meterCalls } from './hooks/meter.ts'
import { tracingHooks } from './hooks/trace.ts'
import { jsonBody, passBodyStream } from './http/body.ts'
import { logAppError } from './http/client-aborts.ts'
import { answerClientErrors } from './http/client-errors.ts'
import { canonicalPaths, colonMethods } from './http/custom-methods.ts'
import { clientAddress } from './http/client-address.ts'
import { cors } from './http/cors.ts'
import { fastQuery } from './http/query-string.ts'
import { routeGuard } from './http/route-guard.ts'
import { errorPages } from './http/error-pages.ts'
import { problemResponses } from './http/problem.ts'
import { routedPaths } from './http/path.ts'
import { requestEnd } from './http/request-log.ts'
import { traceId } from './http/trace.ts'
import { createMetrics } from './telemetry/metrics.ts'
import { serveMetrics } from './telemetry/metrics-server.ts'
import { jobsRunning, startJobs, stopJobs } from './jobs/index.ts'
import { startClock } from './clock.ts'
import { health, type ReadinessCheck } from './http/health.ts'
import { closeListener, Shutdown } from './shutdown.ts'
import { withTraceContext } from './jobs/trace.ts'
import { logger } from './logger.ts'
import { checkDependencies, descriptionsOf, graphqlPartsOf, type Plugin } from './plugin.ts'
import { loadModules } from './modules/registry.ts'
import { CursorCodec } from './pagination/cursor.ts'
import { syncTenants, TenantDirectory } from './tenancy/tenants.ts'

/**
 * Everything the HTTP app and the CLI share: module registry (a malformed module
 * stops here), database (migrated: core's tables and those of `plugins`, whose list is
 * checked first), tenants synced from config, credentials.
 * Returns `createdTenants`: tenants this start-up created.
 */
export async function createPlatform(
  config: AppConfig,
  plugins: readonly Plugin[],
  options: { limiter?: boolean } = {}
): Promise<Platform & { createdTenants: string[] }> {
  checkDependencies(plugins)
  logger.setLevel(config.logLevel)
  logger.setFile(config.log)
  const registry = await loadModules(config.modules)
  const db = await openDatabase(config, plugins)
  try {
    const createdTenants = await syncTenants(db.pool, config, registry)
    const tenants = new TenantDirectory(db.pool, registry)
    await tenants.load()
    const credentials = new CredentialStore(db.pool)
    const users = new UserDirectory(db.pool, tenants, (what) => credentials.forgetUsers(what))
    const sessions = new SessionStore(db.pool, config.sessions)
    const cursors = new CursorCodec(await platformSecret(db.pool, 'cursor-signing'))
    const limiter =
      options.limiter === false
        ? undefined
        : await createLimiter({ redisUrl: config.redis.url, prefix: config.redis.prefix })
    const urls = { public: config.publicUrl ?? `http://${config.host}:${config.port}` }
    const storage = await createStorage(config, await platformSecret(db.pool, 'storage-signing'), () => urls.public)
    const limitsFor = (tenantId: string | undefined) => ({
      ...config.limits,
      ...(tenantId ? config.tenants[tenantId]?.limits : undefined)
    })
    const enqueue = async () => {
      throw new Error('jobs can be enqueued once the server has started')
    }
    const metrics = createMetrics(db.pool)
    return {
      config,
      db,
      registry,
      tenants,
      credentials,
      users,
      sessions,
      limiter,
      cursors,
      storage,
      urls,
      limitsFor,
      enqueue,
      metrics,
      shutdown: new Shutdown(),
      createdTenants
    }
  } catch (err) {
    await db.close()
    throw err
  }
}

export interface AppOptions {
  /** Middleware placed before all others (the tests' OpenAPI contract checker). */
  outermost?: (app: App) => Middleware[]
}

/** What readiness checks from the start: the database, and Redis when configured (the jobs join once they run). */
function readinessChecks(platform: Platform): Map<string, ReadinessCheck> {
  const checks = new Map<string, ReadinessCheck>([
    ['database', async () => void (await platform.db.pool.query('SELECT 1'))]
  ])
  if (platform.config.redis.url && platform.limiter) checks.set('redis', () => platform.limiter!.ping())
  return checks
}

/** The Feathers app on Koa with `plugins` configured in order; the middleware order is made explicit here. */
export function createApp(platform: Platform, plugins: readonly Plugin[], options: AppOptions = {}): App {
  checkDependencies(plugins)
  const bodies = plugins.flatMap((p) => p.bodies ?? [])
  const ownRoutes = plugins.flatMap((p) => p.ownRoutes ?? [])
  const app = koa(feathers()) as unknown as App
  fastQuery(app.request)
  app.on('error', logAppError)
  // Probes first of all: no log line, metric, budget, rate limit or contract check per probe (README, "Health and shutdown").
  app.set('readiness', readinessChecks(platform))
  app.use(
    health({
      shutdown: platform.shutdown,
      checks: () => Object.fromEntries(app.get('readiness')),
      timeoutMs: platform.config.health.timeoutMs,
      errorsUrl: () => app.get('errorsUrl'),
      degraded: () => {
        const degraded: Record<string, unknown> = {}
        if (platform.registry.unavailable.length)
          degraded.modulePackages = platform.registry.unavailable.map((u) => ({
            package: u.packageName,
            ...(u.key ? { module: u.key } : {})
          }))
        // Loaded modules some tenants may not move to (a downgrade, breaking changes no migration answers): how many
        // tenants each, not which (the reasons are the log's and, for each tenant's admins, GET /api/v1/modules).
        const refused = new Map<string, number>()
        for (const t of platform.tenants.list())
          for (const key of t.unavailable.keys())
            if (platform.registry.get(key)) refused.set(key, (refused.get(key) ?? 0) + 1)
        if (refused.size)
          degraded.moduleUpgradesRefused = [...refused]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([module, tenants]) => ({ module, tenants }))
        for (const task of app.get('background') ?? []) Object.assign(degraded, task.degraded?.())
        return Object.keys(degraded).length ? degraded : undefined
      }
    })
  )
  for (const m of options.outermost?.(app) ?? []) app.use(m)
  app.set('platform', platform)
  app.set('describes', descriptionsOf(plugins))
  app.set('ownRoutes', ownRoutes)
  app.set('graphqlParts', graphqlPartsOf(plugins))
  app.set(
    'errorsUrl',
    platform.config.errors.baseUrl ??
      `${platform.config.publicUrl ?? `http://${platform.config.host}:${platform.config.port}`}/errors`
  )
  app.use(requestEnd(platform.config.log.requests, platform.metrics))
  app.use(clientAddress(platform.config.http.trustProxy))
  app.use(traceId())
  app.use(cors(platform.config.http.cors))
  app.use(routedPaths)
  app.use(
    problemResponses(
      () => app.get('errorsUrl'),
      plugins.flatMap((p) => p.problemFormats ?? [])
    )
  )
  app.use(errorPages())
  app.use(identify(platform.credentials, platform.sessions))
  if (platform.limiter) app.use(rateLimit(platform.limiter, (p) => platform.limitsFor(p?.tenantId).requestsPerMinute))
  app.use(
    requestBudget((p) => {
      const limits = platform.limitsFor(p?.tenantId)
      return { units: limits.requestBudget, unitsPerRequest: limits.budgetUnitsPerRequest }
    })
  )
  app.use(rejectBadCredentials)
  // Routes first: a request to a path or method that does not exist is refused before its body is read.
  app.use(canonicalPaths(plugins.flatMap((p) => (p.canonicalPath ? [p.canonicalPath] : []))))
  app.use(colonMethods(plugins.flatMap((p) => p.colonMethods ?? [])))
  app.use(routeGuard(app, ownRoutes))
  app.use(jsonBody(platform.config.http.maxJsonBytes, { bodies, ownRoutes }))
  app.use(passBodyStream(bodies))
  app.configure(rest())
  app.hooks({
    around: { all: [...tracingHooks(), fromHttp, meterCalls, authenticate(platform.credentials), acceptJsonData] }
  })
  for (const plugin of plugins) app.configure((a) => plugin.configure(a))
  return app
}

export interface RunningServer {
  app: App
  server: Server
  url: string
  /** Where Prometheus scrapes this instance (config `metrics`), when enabled. */
  metricsUrl?: string
  /**
   * Drains, then stops everything in order: readiness 503 and running jobs handed back at once,
   * the listener closed after `shutdown.readinessDelaySeconds`, requests and bulk calls under way
   * given `shutdown.deadlineSeconds` more (then cut), pools closed, embedded PostgreSQL stopped.
   */
  close(): Promise<void>
}

/** Starts listening (and the job scheduler when enabled); close() stops all of it in order. */
export async function startServer(
  platform: Platform,
  plugins: readonly Plugin[],
  options: AppOptions = {}
): Promise<RunningServer> {
  const app = createApp(platform, plugins, options)
  // Not ready while the listener is up but the scheduler not yet (replaced by the real check below).
  if (platform.config.jobs.enabled)
    app.get('readiness').set('jobs', () => Promise.reject(new Error('the job scheduler has not started yet')))
  await platform.credentials.listen()
  await platform.tenants.listen()
  const stopClock = await startClock(platform.db.pool, platform.config.clock)
  const server = await app.listen(platform.config.port, platform.config.host)
  server.on(
    'clientError',
    answerClientErrors(() => app.get('errorsUrl'))
  )
  if (!server.listening) await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const url = `http://${platform.config.host}:${port}`
  if (!platform.config.errors.baseUrl) app.set('errorsUrl', `${platform.config.publicUrl ?? url}/errors`)
  platform.urls.public = platform.config.publicUrl ?? url
  const jobs = [
    { name: 'sessions.purge', every: '1 hour', run: async () => ({ removed: await platform.sessions.purgeExpired() }) },
    ...plugins.flatMap((p) => p.jobs?.(app) ?? [])
  ]
  platform.metrics.jobNames = jobs.map((j) => j.name)
  const background = plugins.flatMap((p) => (p.background ? [p.background(app)] : []))
  app.set('background', background)
  for (const task of background) task.start()
  const metrics = await serveMetrics(platform.metrics, platform.config.metrics)
  let agenda = platform.config.jobs.enabled
    ? await startJobs(platform.db.pool, jobs, {
        process: true,
        processEverySeconds: platform.config.jobs.processEverySeconds,
        logLevel: platform.config.log.jobs
      })
    : undefined
  if (agenda) {
    const processing = agenda
    app.get('readiness').set('jobs', async () => {
      if (!jobsRunning(processing)) throw new Error('the job scheduler is not running')
      await platform.db.pool.query('SELECT 1 FROM agenda_jobs LIMIT 1')
    })
  }
  // An instance that runs no jobs still enqueues them (for instances that do), on a scheduler started on first use.
  platform.enqueue = async (name, jobData, options) => {
    const data = withTraceContext(jobData)
    agenda ??= await startJobs(platform.db.pool, jobs, { process: false })
    if (options?.delayMs) await agenda.schedule(new Date(Date.now() + options.delayMs), name, data)
    else await agenda.now(name, data)
  }
  return {
    app,
    server,
    url,
    metricsUrl: metrics?.url,
    async close() {
      const started = Date.now()
      const { deadlineSeconds, readinessDelaySeconds } = platform.config.shutdown
      // The delay first (the balancer stops sending), then deadlineSeconds for the work under way.
      const deadline = started + (readinessDelaySeconds + deadlineSeconds) * 1000
      platform.shutdown.begin('closing')
      logger.info('draining: readiness answers 503, bulk calls take no more rows, running jobs are handed back', {
        deadlineSeconds,
        readinessDelaySeconds
      })
      // The jobs first, at once; the pool stays open under them until they have handed back (or the deadline).
      const jobsStopped = agenda ? stopJobs(agenda, { timeoutMs: deadline - started }) : undefined
      const backgroundStopped = Promise.all(background.map((task) => task.stop()))
      if (readinessDelaySeconds > 0) await sleep(Math.min(readinessDelaySeconds * 1000, deadline - Date.now()))
      const listener = await closeListener(server, deadline)
      logger.info(
        listener.cut
          ? 'listener closed; connections still busy at the deadline were cut'
          : 'listener closed; every request under way finished',
        { cut: listener.cut }
      )
      await backgroundStopped
      const jobsResult = await jobsStopped
      if (jobsResult)
        logger.info('jobs stopped', { handedBack: jobsResult.handedBack, releasedAtDeadline: jobsResult.released })
      // The listener is closed already; Feathers' teardown would close it again (ERR_SERVER_NOT_RUNNING).
      ;(app as { server?: Server }).server = undefined
      await app.teardown()
      await platform.credentials.close()
      await platform.tenants.close()
      stopClock()
      await platform.limiter?.close()
      await platform.storage.close?.()
      await metrics?.close()
      await platform.db.close()
      logger.info('stopped', {
        ms: Date.now() - started,
        embeddedDatabase: platform.db.embedded?.startedHere ? 'stopped' : undefined
      })
    }
  }
}
