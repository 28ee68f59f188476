/**
 * `npm run bench:workspace`: the records workspace's pages in a browser at a million records (issue 31: "the first
 * page of the list and a record page load in under 1 s on this machine with 1,000,000 records in the module").
 *
 *  1. the database: `--reuse-db URL` (one `bench:scale --keep-db` seeded: /work/briefs/ws-bench-db.txt names the kept
 *     one), else a fresh one seeded the same way by bench/scale.ts in a child (`--keep-db --only <no scenario>`:
 *     migrate, seed, start the service, wait for its index builds, measure nothing), dropped at the end unless --keep-db;
 *  2. a user of tenant `bench` with one role (`--role`, default safety-manager: reads every incident), made or reset
 *     (a new password) in this process as the CLI would, before the service starts; it is the seeded investigation
 *     lead of half the incidents, so its home page has plenty that "needs" it;
 *  3. the service (bench/service-server.ts) in a child process, with its metrics listener on a free port (METRICS_PORT):
 *     the server's own time of a page is what its request added to `records_http_request_duration_seconds_sum`
 *     (measured by the service from the request's arrival to the last byte sent); once it runs, a wait until
 *     PostgreSQL builds no index and analyzes nothing in this database for 3 s (the service's index builder analyzes
 *     `records` when a statistics object of its indexes is empty, as a stopped ANALYZE leaves them);
 *  4. Debian's Chromium (test/helpers/browser.ts; skipped with a line when it is missing) signs in through /sign-in,
 *     then, per page, one navigation at a time: 3 warm-ups (`--warmup`), then `--samples` (default 15) timed ones.
 *     Each is cold: from about:blank, with the browser's cache off (DevTools Network.setCacheDisabled, so scripts and
 *     styles are fetched every time; `--warm-cache` keeps them). From the page's PerformanceNavigationTiming:
 *     responseStart (first byte), domContentLoadedEventEnd and loadEventEnd (the figure: navigation start to the end
 *     of `load`); from the service's metrics its own time for the page (assets and favicon apart) and the number of
 *     requests the navigation made of it;
 *  5. a table of medians and p95 (nearest rank) per page; a page answering non-200 is reported with its status and
 *     not timed. Exit 0 whenever the run completes: a page over 1 s is a figure, not an error.
 *
 * Pages: `/records` (home), `/records/incident` (first page of the list, default sort), `?q=<word>` (`--q`, default
 * forklift: 30 % of titles), `?sort=-payload.occurredAt`, and `/records/incident/<id>` rotating over `--ids` (50)
 * random live incidents of `bench`, drawn from a 1 % sample of the table's blocks so they are spread over it.
 *
 * Options: --reuse-db URL, --keep-db, --records N (when seeding; default 1,000,000), --samples N, --warmup N,
 * --ids N, --q WORD, --role ROLE, --only home,list,list-q,list-sort,record,path, --path P (another page to time, e.g.
 * /settings/api-keys for comparison; repeatable), --warm-cache, --verbose (each navigation's figures), --budget S (stop sampling one page after S
 * seconds, default 120; marked *), --timeout S (the whole run, default 1,800: it then stops what it started).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import type { Browser, Page } from 'playwright-core'
import { projectRoot } from '../core/paths.ts'
import { chromiumMissing, launchChromium } from '../test/helpers/browser.ts'
import {
  benchCluster,
  benchModules,
  defaultTenant,
  fmt,
  median,
  postgresVersion,
  startChild,
  table,
  waitForIndexBuilds
} from './common.ts'

const { values: opt } = parseArgs({
  options: {
    'reuse-db': { type: 'string' },
    'keep-db': { type: 'boolean', default: false },
    records: { type: 'string' },
    samples: { type: 'string' },
    warmup: { type: 'string' },
    ids: { type: 'string' },
    q: { type: 'string' },
    role: { type: 'string' },
    only: { type: 'string' },
    path: { type: 'string', multiple: true },
    'warm-cache': { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    budget: { type: 'string' },
    timeout: { type: 'string' }
  }
})
const settings = {
  records: Number(opt.records ?? 1_000_000),
  samples: Number(opt.samples ?? 15),
  warmup: Number(opt.warmup ?? 3),
  ids: Number(opt.ids ?? 50),
  q: opt.q ?? 'forklift',
  role: opt.role ?? 'safety-manager',
  budgetMs: Number(opt.budget ?? 120) * 1000,
  timeoutMs: Number(opt.timeout ?? 1800) * 1000,
  coldCache: !opt['warm-cache'],
  navigationTimeoutMs: 30_000,
  targetMs: 1000
}
const moduleKey = 'incident'
const userName = 'workspace-bench'
/** bench/scale.ts's `leads.high`: the investigation lead of 50 % of the seeded incidents. */
const busyLead = 'a0000000-0000-4000-8000-00000000000a'
const log = (line: string) => process.stderr.write(line + '\n')
const t0 = Date.now()
const since = (start: number) => `${((Date.now() - start) / 1000).toFixed(1)} s`
const deadline = t0 + settings.timeoutMs
const percentile = (values: number[], p: number) => {
  if (!values.length) return NaN
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}

// ---------------------------------------------------------------- the database, the user, the service

/** A database seeded by bench/scale.ts in a child process, kept by it; its URL is read from the child's last lines. */
async function seedWithScale(): Promise<string> {
  const args = ['--import', 'tsx', join(projectRoot, 'bench', 'scale.ts'), '--keep-db', '--only', 'seed-only']
  args.push('--records', String(settings.records), '--samples', '1')
  const child = spawn(process.execPath, args, { cwd: projectRoot, stdio: ['ignore', 'ignore', 'pipe'] })
  let url: string | undefined
  let rest = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n')
    rest = lines.pop()!
    for (const line of lines) {
      log(`  [scale] ${line}`)
      url = /^kept database (\S+)/.exec(line)?.[1] ?? url
    }
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0 || !url) throw new Error(`bench/scale.ts did not seed a database (exit ${code})`)
  return url
}

/**
 * The bench user with one role and a fresh password, made (or reset) as the CLI makes users. Its id is the one
 * bench/scale.ts seeded as investigation lead of half the incidents, so the home page's "Investigation lead is me"
 * has ~280,000 open records to show and count, as a busy lead's would (set before any session or group refers to it).
 */
async function benchUser(url: string, role: string): Promise<string> {
  const { createPlatform } = await import('../core/app.ts')
  const { loadConfig } = await import('../core/config.ts')
  const { plugins } = await import('../plugins/index.ts')
  const platform = await createPlatform(
    loadConfig({
      jobs: { enabled: false },
      logLevel: 'error',
      metrics: { enabled: false },
      tenants: { [defaultTenant]: { name: 'Bench', modules: benchModules } },
      database: { url }
    }),
    plugins,
    { limiter: false }
  )
  try {
    const password = randomBytes(18).toString('base64url')
    const found = await platform.users.byUserName(defaultTenant, userName)
    const user = found ?? (await platform.users.create(defaultTenant, { userName, roles: [role], password }))
    if (found) {
      await platform.users.update(defaultTenant, found.id, () => ({ roles: [role], active: true }))
      await platform.users.setPassword(defaultTenant, found.id, password)
    }
    if (user.id !== busyLead) {
      // As the database's owner: the platform's pool works under row-level security.
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      await client
        .query('UPDATE users SET id = $3 WHERE tenant_id = $1 AND id = $2', [defaultTenant, user.id, busyLead])
        .finally(() => client.end())
    }
    return password
  } finally {
    await platform.db.close()
  }
}

/** Live incidents of `bench` from a 1 % sample of the table's blocks (spread over it), in random order. */
async function recordIds(url: string, n: number): Promise<string[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query(
      `SELECT id::text FROM records TABLESAMPLE SYSTEM (1)
        WHERE tenant_id = $1 AND module_key = $2 AND deleted_at IS NULL ORDER BY random() LIMIT $3`,
      [defaultTenant, moduleKey, n]
    )
    return rows.map((r) => r.id as string)
  } finally {
    await client.end()
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}

/** The service's request-duration sums and counts by series (method, route, status), read from its metrics listener. */
async function serverClock(metricsUrl: string): Promise<Map<string, { sum: number; count: number }>> {
  const text = await (await fetch(metricsUrl)).text()
  const out = new Map<string, { sum: number; count: number }>()
  for (const m of text.matchAll(/^records_http_request_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/gm)) {
    const e = out.get(m[2]) ?? { sum: 0, count: 0 }
    e[m[1] as 'sum' | 'count'] = Number(m[3])
    out.set(m[2], e)
  }
  return out
}

/** What the service spent on a navigation's page (its own time, ms) and how many requests it answered for it. */
function serverSpent(before: Map<string, { sum: number; count: number }>, after: typeof before) {
  let ms = 0
  let requests = 0
  const routes: string[] = []
  for (const [labels, a] of after) {
    const b = before.get(labels) ?? { sum: 0, count: 0 }
    if (a.count === b.count) continue
    requests += a.count - b.count
    routes.push(`${labels} ${((a.sum - b.sum) * 1000).toFixed(1)} ms`)
    // The page itself: not its scripts and styles (the asset server names no route: `other`), nor the favicon.
    if (!/route="([^"]*(assets|favicon)[^"]*|other|unmatched)"/.test(labels)) ms += (a.sum - b.sum) * 1000
  }
  return { ms, requests, routes }
}

// ---------------------------------------------------------------- the pages

interface PageSpec {
  key: string
  label: string
  path: (i: number) => string
}

function pages(ids: string[]): PageSpec[] {
  const list = `/records/${moduleKey}`
  const all: PageSpec[] = [
    { key: 'home', label: '/records (home)', path: () => '/records' },
    { key: 'list', label: `${list} (first page, default sort)`, path: () => list },
    { key: 'list-q', label: `${list}?q=${settings.q}`, path: () => `${list}?q=${encodeURIComponent(settings.q)}` },
    { key: 'list-sort', label: `${list}?sort=-payload.occurredAt`, path: () => `${list}?sort=-payload.occurredAt` },
    { key: 'record', label: `${list}/<id> (${ids.length} ids)`, path: (i) => `${list}/${ids[i % ids.length]}` }
  ]
  const extra = (opt.path ?? []).map((path) => ({ key: 'path', label: path, path: () => path }))
  return [...all, ...extra].filter((p) => !opt.only || opt.only.split(',').some((k) => p.key === k.trim()))
}

interface Sample {
  responseStart: number
  domContentLoaded: number
  load: number
  serverMs: number
  requests: number
  bytes: number
}

interface Measured {
  page: PageSpec
  status: number
  samples: Sample[]
  capped: boolean
  note?: string
}

/** One cold navigation: from about:blank to the end of `load`, with the service's time for it. */
async function navigate(page: Page, url: string, metricsUrl: string): Promise<{ status: number; sample: Sample }> {
  await page.goto('about:blank')
  const before = await serverClock(metricsUrl)
  const response = await page.goto(url, { waitUntil: 'load', timeout: settings.navigationTimeoutMs })
  const nav = await page.evaluate(() => {
    const e = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming
    return {
      responseStart: e.responseStart,
      domContentLoaded: e.domContentLoadedEventEnd,
      load: e.loadEventEnd,
      bytes: e.transferSize
    }
  })
  const spent = serverSpent(before, await serverClock(metricsUrl))
  if (opt.verbose) log(`    ${spent.routes.join('; ')}`)
  return { status: response?.status() ?? 0, sample: { ...nav, serverMs: spent.ms, requests: spent.requests } }
}

async function measurePage(page: Page, base: string, metricsUrl: string, spec: PageSpec): Promise<Measured> {
  const start = Date.now()
  const samples: Sample[] = []
  let i = 0
  for (let w = 0; w < settings.warmup + settings.samples; w++) {
    if (Date.now() > deadline || (samples.length && Date.now() - start > settings.budgetMs))
      return { page: spec, status: 200, samples, capped: true }
    const url = base + spec.path(i++)
    const { status, sample } = await navigate(page, url, metricsUrl)
    if (status !== 200) {
      const text =
        (await page
          .locator('h1')
          .first()
          .textContent({ timeout: 1000 })
          .catch(() => null)) ?? ''
      log(`  ${spec.label}: ${status} ${text.trim().slice(0, 60)} (${url})`)
      return { page: spec, status, samples: [], capped: false, note: `${status} ${text.trim().slice(0, 30)}` }
    }
    if (w >= settings.warmup) samples.push(sample)
    if (opt.verbose)
      log(`    ${w < settings.warmup ? 'warm-up' : 'sample'} ${url.slice(base.length)}: ${JSON.stringify(sample)}`)
  }
  const p = (k: keyof Sample) =>
    `${fmt(median(samples.map((s) => s[k])))}/${fmt(
      percentile(
        samples.map((s) => s[k]),
        95
      )
    )}`
  log(
    `  ${spec.label}: load ${p('load')} ms (median/p95), first byte ${p('responseStart')}, server ${p('serverMs')}; ` +
      `${samples.length} samples in ${since(start)}`
  )
  return { page: spec, status: 200, samples, capped: false }
}

async function signIn(page: Page, base: string, password: string) {
  await page.goto(`${base}/sign-in?tenant=${defaultTenant}&next=/records`)
  await page.getByLabel('Organisation').fill(defaultTenant)
  await page.getByLabel('User name').fill(userName)
  await page.getByLabel('Password').fill(password)
  await Promise.all([
    page.waitForURL((u) => u.pathname !== '/sign-in', { timeout: settings.navigationTimeoutMs }),
    page.getByRole('button', { name: 'Sign in' }).click()
  ])
  const cookie = (await page.context().cookies()).find((c) => c.name === 'records_session')
  if (!cookie) throw new Error('signing in left no session cookie')
}

// ---------------------------------------------------------------- main

function row(r: Measured): string[] {
  if (r.status !== 200)
    return [r.page.label, '0', r.note ?? String(r.status), ...Array(9).fill(''), `miss (${r.status})`]
  const col = (k: keyof Sample, digits = 0) => {
    const v = r.samples.map((s) => s[k])
    const mark = r.capped ? '*' : ''
    return [`${fmt(median(v), digits)}${mark}`, `${fmt(percentile(v, 95), digits)}${mark}`]
  }
  const within = percentile(
    r.samples.map((s) => s.load),
    95
  )
  return [
    r.page.label,
    String(r.samples.length),
    ...col('load'),
    ...col('domContentLoaded'),
    ...col('responseStart'),
    ...col('serverMs', 1),
    fmt(median(r.samples.map((s) => s.requests))),
    `${fmt(median(r.samples.map((s) => s.bytes)) / 1024, 1)}`,
    within < settings.targetMs ? 'ok' : 'over 1 s'
  ]
}

async function main() {
  process.chdir(projectRoot)
  const missing = chromiumMissing((m) => {
    throw new Error(m)
  })
  if (missing) {
    log(`workspace benchmark skipped: ${missing}`)
    return
  }
  const loadBefore = loadavg()[0]
  if (loadBefore > 0.5 * cpus().length)
    log(
      `warning: load average ${loadBefore.toFixed(2)} on ${cpus().length} CPU(s) before start: figures will be skewed`
    )
  // Whatever happens, the run ends: past the deadline (and a minute for stopping), the process exits.
  setTimeout(() => {
    log(`workspace benchmark: stopped after ${settings.timeoutMs / 1000} s (--timeout)`)
    process.exit(1)
  }, settings.timeoutMs + 60_000).unref()

  const reused = opt['reuse-db']
  // Without DATABASE_URL the bench cluster (data/bench) holds the database: started here, so that bench/scale.ts
  // (seeding) leaves it running, and stopped at the end when this run started it.
  const { startEmbedded } = await import('../core/db/embedded.ts')
  const embedded = process.env.DATABASE_URL ? undefined : await startEmbedded({ ...benchCluster, database: 'postgres' })
  let seededUrl: string | undefined
  let service: Awaited<ReturnType<typeof startChild>> | undefined
  let browser: Browser | undefined
  try {
    const url = reused ?? (seededUrl = await seedWithScale())
    const dbName = new URL(url).pathname.slice(1)
    log(`database: ${dbName}${reused ? ' (reused)' : ' (seeded now by bench/scale.ts)'}`)
    const password = await benchUser(url, settings.role)
    const ids = await recordIds(url, settings.ids)
    if (!ids.length) throw new Error(`no live ${moduleKey} record of tenant ${defaultTenant} in ${dbName}`)
    log(`user ${userName} (${settings.role}); ${ids.length} record ids, e.g. ${ids.slice(0, 3).join(', ')}`)

    const metricsPort = await freePort()
    process.env.METRICS_ENABLED = 'true'
    process.env.METRICS_PORT = String(metricsPort)
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`
    let t = Date.now()
    service = await startChild(
      'service',
      join(projectRoot, 'bench', 'service-server.ts'),
      ['--database-url', url, '--tenant', defaultTenant],
      projectRoot
    )
    log(`service: ${service.url}, started in ${since(t)}; waiting for index builds`)
    const waited = await waitForIndexBuilds(url, log)
    await serverClock(metricsUrl)

    browser = await launchChromium()
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    context.setDefaultTimeout(settings.navigationTimeoutMs)
    const page = await context.newPage()
    if (settings.coldCache) {
      const cdp = await context.newCDPSession(page)
      await cdp.send('Network.enable')
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true })
    }
    await signIn(page, service.url, password)
    log(`signed in as ${userName}; measuring:`)

    t = Date.now()
    const results: Measured[] = []
    for (const spec of pages(ids)) {
      if (Date.now() > deadline) break
      results.push(await measurePage(page, service.url, metricsUrl, spec))
    }
    log(`measured in ${since(t)}`)

    const header = ['page', 'n', 'load p50', 'load p95', 'DCL p50', 'DCL p95', 'TTFB p50', 'TTFB p95']
    const rows = [[...header, 'server p50', 'server p95', 'requests', 'KiB', 'verdict']]
    for (const r of results) rows.push(row(r))
    process.stdout.write(
      `\n${settings.records.toLocaleString('en')} incident records in tenant ${defaultTenant} (${dbName}); ms from ` +
        `navigation start, ${settings.samples} cold navigations after ${settings.warmup} warm-ups per page, browser ` +
        `cache ${settings.coldCache ? 'off' : 'on'}; role ${settings.role}; ${cpus().length} CPU(s), node ` +
        `${process.version}, Chromium ${browser.version()}, PostgreSQL ${await postgresVersion(url)}; index builds ` +
        `waited ${(waited / 1000).toFixed(1)} s\n\n` +
        table(rows) +
        `\n\nload: loadEventEnd; DCL: domContentLoadedEventEnd; TTFB: responseStart; server: the service's own time ` +
        `for the page (records_http_request_duration_seconds); requests: what one navigation asked of the service; ` +
        `KiB: the page's transfer size. Verdict: load p95 < ${settings.targetMs} ms. * sampling stopped after ` +
        `${settings.budgetMs / 1000} s. Total run ${since(t0)}; load average ${loadBefore.toFixed(2)} before, ` +
        `${loadavg()[0].toFixed(2)} after.\n`
    )
  } finally {
    await browser?.close().catch(() => undefined)
    await service?.stop().catch(() => undefined)
    if (seededUrl && !opt['keep-db']) await dropDatabase(seededUrl)
    else if (seededUrl) log(`kept database ${seededUrl}`)
    if (embedded?.startedHere) await embedded.stop().catch(() => undefined)
  }
}

async function dropDatabase(url: string) {
  const name = new URL(url).pathname.slice(1)
  const admin = new URL(url)
  admin.pathname = '/postgres'
  const client = new pg.Client({ connectionString: admin.toString() })
  await client.connect()
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`)
    log(`dropped database ${name}`)
  } catch (err) {
    log(`could not drop ${name}: ${(err as Error).message}`)
  } finally {
    await client.end()
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`workspace benchmark failed: ${err?.stack ?? err}\n`)
    process.exit(1)
  }
)
