/**
 * `npm run bench:scale`: finding records at a million (issue 29, "Done when").
 *
 *  1. a fresh database (DATABASE_URL's server, or the embedded cluster in data/bench), migrated, with the tenant
 *     `bench` and four other tenants (`scale-1` … `scale-4`), each with the incident module, as a service start
 *     makes them (createPlatform, jobs off, then closed);
 *  2. seeded in SQL, in chunks of 100,000 (INSERT … SELECT generate_series): N incident records in `bench` and N
 *     more spread over the other four, chunks of both interleaved in the table as tenants' writes would be; payloads
 *     are drawn so that every filter has a value at high (~50 %), medium (~6 %), rare (50 rows) and absent (0 rows)
 *     selectivity; then record_sequences and VACUUM ANALYZE;
 *  3. the service (bench/service-server.ts) in a child process; we wait until PostgreSQL builds no index in this
 *     database (pg_stat_progress_create_index empty for 3 s running: indexes that modules declare are built by the
 *     service with CREATE INDEX CONCURRENTLY) and print the indexes of `records`;
 *  4. per scenario, over HTTP with the tenant's API key, one request at a time: the first page (limit 50) and a page
 *     1,000 deep (nextCursor followed 1,000 times once, untimed; "n/a" when the selection has fewer pages), each
 *     3 warm-up requests then `--samples` timed ones; a scenario answering non-200 is reported with its status;
 *  5. a table: p50 and p95 of both pages against the target (p95 < 50 ms). Misses are figures, not errors:
 *     exit 0 whenever the run completes.
 *
 * Options: --records N (per side, default 1,000,000), --samples N (default 30), --quick (100,000 records,
 * 10 samples), --budget S (stop sampling one page after S seconds, default 60; the table marks it),
 * --follow-budget S (stop following nextCursor to the deep page after S seconds, default 120: "n/r"), --only a,b
 * (scenario keys or their prefix, e.g. `site,sort`), --keep-db, --reuse-db URL (measure on a database an earlier run
 * kept, with the same --records: no seeding; the service builds what the code declares now, and the run waits).
 */
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { projectRoot } from '../core/paths.ts'
import {
  benchDatabase,
  benchModules,
  defaultTenant,
  fmt,
  postgresVersion,
  startChild,
  table,
  waitForIndexBuilds
} from './common.ts'

const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    records: { type: 'string' },
    samples: { type: 'string' },
    budget: { type: 'string' },
    'follow-budget': { type: 'string' },
    only: { type: 'string' },
    'keep-db': { type: 'boolean', default: false },
    'reuse-db': { type: 'string' }
  }
})
const settings = {
  records: Number(opt.records ?? (opt.quick ? 100_000 : 1_000_000)),
  samples: Number(opt.samples ?? (opt.quick ? 10 : 30)),
  warmup: 3,
  budgetMs: Number(opt.budget ?? 60) * 1000,
  followBudgetMs: Number(opt['follow-budget'] ?? 120) * 1000,
  limit: 50,
  deep: 1000,
  chunk: 100_000,
  targetMs: 50
}
const otherTenants = ['scale-1', 'scale-2', 'scale-3', 'scale-4']
const moduleKey = 'incident'
const log = (line: string) => process.stderr.write(line + '\n')
const t0 = Date.now()
const since = (start: number) => `${((Date.now() - start) / 1000).toFixed(1)} s`

// ---------------------------------------------------------------- data

/** The seeded data's calendar: created_at rises with the insert order over three years; occurredAt is 0–3 days before. */
const spanStart = Date.parse('2024-01-01T00:00:00Z')
const spanSeconds = 3 * 365 * 86400
/** Rare values sit on the rows whose number g has g % rareStep = their offset: 50 rows per tenant each. */
const rareRows = 50
const rare = {
  site: 7,
  severity: 13,
  category: 17,
  lead: 19,
  bodyPart: 23,
  state: 29,
  title: 31,
  description: 37
}
const leads = {
  high: 'a0000000-0000-4000-8000-00000000000a',
  medium: 'b0000000-0000-4000-8000-00000000000b',
  rare: 'c0000000-0000-4000-8000-00000000000c',
  absent: 'd0000000-0000-4000-8000-00000000000d'
}
const values = {
  site: { high: 'Leeds DC', medium: 'Bristol Plant', rare: 'Zürich Lab', absent: 'Atlantis Base' },
  otherSites: [
    'Glasgow Yard',
    'Dublin Office',
    'Rotterdam Hub',
    'Lyon Works',
    'Porto Depot',
    'Gdańsk Terminal',
    'Oslo Office',
    'Madrid Store'
  ]
}
const seedActor = { type: 'system', id: 'bench-scale', name: 'scale benchmark seed' }

/** A bucket 0..9999 drawn from row g and a salt (hashtext: the same data on every run). */
const bucket = (salt: string) => `mod(hashtext($1 || ':${salt}:' || g)::bigint + 2147483648, 10000)`

/**
 * One chunk [from, to] of a tenant's `total` records, as one INSERT … SELECT. $1 tenant, $2 from, $3 to,
 * $4 total, $5 module version, $6 number prefix, $7 width, $8 suffix, $9 actor.
 */
const chunkSql = `
WITH src AS (
  SELECT g,
    ${bucket('site')} AS hs, ${bucket('severity')} AS hv, ${bucket('category')} AS hc, ${bucket('state')} AS hst,
    ${bucket('lead')} AS hl, ${bucket('body')} AS hb, ${bucket('title')} AS ht,
    mod(hashtext($1 || ':occurred:' || g)::bigint + 2147483648, 259200) AS lag,
    greatest(($4::int / ${rareRows}), 1) AS step,
    timestamptz '${new Date(spanStart).toISOString()}' + make_interval(secs => (g - 1)::float8 * ${spanSeconds} / $4::int) AS ts
  FROM generate_series($2::int, $3::int) AS g
), p AS (
  SELECT g, ts,
    CASE WHEN g % step = ${rare.state} THEN 'actions-pending' WHEN hst < 5000 THEN 'reported'
         WHEN hst < 5600 THEN 'investigating' ELSE 'closed' END AS state,
    jsonb_build_object(
      'title', CASE WHEN g % step = ${rare.title} THEN 'Pallet dropped at the Zürich loading bay'
                    ELSE (ARRAY['Forklift clipped racking in aisle ' || (1 + ht % 12), 'Reversing forklift struck a pallet',
                                'Forklift tipped its load on the ramp', 'Slip on wet floor by the canteen',
                                'Chemical drum leak in bay ' || (1 + ht % 9), 'Fire door left unlocked overnight',
                                'Fall from a ladder in the stores', 'Mislabelled batch sent to dispatch',
                                'Cut on a sharp edge at the press', 'Near miss with a reversing lorry'])[1 + ht % 10] END,
      'description', 'Reported during the shift by the area supervisor; the area was made safe and the team briefed.'
                     || CASE WHEN g % step = ${rare.description} THEN ' Old lagging suspected to contain asbestos was found behind the panel.' ELSE '' END
                     || CASE WHEN ht % 3 = 0 THEN ' A follow-up check of the equipment is booked with maintenance.' ELSE '' END,
      'occurredAt', to_char((ts - make_interval(secs => lag)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
      'site', CASE WHEN g % step = ${rare.site} THEN '${values.site.rare}' WHEN hs < 5000 THEN '${values.site.high}'
                   WHEN hs < 5600 THEN '${values.site.medium}'
                   ELSE (ARRAY[${values.otherSites.map((s) => `'${s}'`).join(', ')}])[1 + hs % ${values.otherSites.length}] END,
      'category', CASE WHEN g % step = ${rare.category} THEN 'security' WHEN hc < 5000 THEN 'near-miss'
                       WHEN hc < 7500 THEN 'injury' WHEN hc < 9400 THEN 'property-damage' ELSE 'environmental' END,
      'severity', CASE WHEN g % step = ${rare.severity} THEN 'critical' WHEN hv < 5000 THEN 'low'
                       WHEN hv < 9400 THEN 'medium' ELSE 'high' END
    )
    || CASE WHEN g % step = ${rare.lead} THEN jsonb_build_object('investigationLead', '${leads.rare}')
            WHEN hl < 5000 THEN jsonb_build_object('investigationLead', '${leads.high}')
            WHEN hl < 5600 THEN jsonb_build_object('investigationLead', '${leads.medium}') ELSE '{}'::jsonb END
    || CASE WHEN g % step = ${rare.bodyPart} THEN jsonb_build_object('bodyParts', jsonb_build_array('internal'))
            WHEN hb < 600 THEN jsonb_build_object('bodyParts', jsonb_build_array('hands', 'arms'))
            WHEN hb < 1500 THEN jsonb_build_object('bodyParts', jsonb_build_array('hands')) ELSE '{}'::jsonb END
    || CASE WHEN hb < 1000 THEN jsonb_build_object('injuredPeople', 1 + hb % 5) ELSE '{}'::jsonb END
    AS payload
  FROM src
)
INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by, created_at, updated_at)
SELECT $1, '${moduleKey}', $5, $6 || CASE WHEN length(g::text) >= $7 THEN g::text ELSE lpad(g::text, $7, '0') END || $8,
       state, payload, $9::jsonb, $9::jsonb, ts, ts
FROM p ORDER BY g`

/** Migrates the database and makes the tenants with the incident module, as a service start does. */
async function migrate(url: string) {
  const { createPlatform } = await import('../core/app.ts')
  const { loadConfig } = await import('../core/config.ts')
  const { plugins } = await import('../plugins/index.ts')
  const platform = await createPlatform(
    loadConfig({
      jobs: { enabled: false },
      logLevel: 'error',
      tenants: {
        [defaultTenant]: { name: 'Bench', modules: benchModules },
        ...Object.fromEntries(otherTenants.map((id) => [id, { name: `Scale ${id}`, modules: [moduleKey] }]))
      },
      database: { url }
    }),
    plugins,
    { limiter: false }
  )
  await platform.db.close()
}

/** N records in `bench` and N over the other tenants, 100,000 at a time, chunks of both interleaved. */
async function seed(url: string, n: number) {
  const { loadConfig } = await import('../core/config.ts')
  const { loadModules } = await import('../core/modules/registry.ts')
  const registry = await loadModules(loadConfig({ database: { url } }).modules)
  const module = registry.get(moduleKey)!
  const { prefix, suffix, width } = module.numberPattern.render(new Date())
  const perOther = Math.floor(n / otherTenants.length)
  const plan = [
    { tenant: defaultTenant, total: n },
    ...otherTenants.map((tenant, i) => ({ tenant, total: i === 0 ? n - perOther * 3 : perOther }))
  ]
  // Chunks in turn: bench, then the others', so each tenant's rows are spread over the table.
  const queues = plan.map(({ tenant, total }) => {
    const chunks: Array<{ tenant: string; total: number; from: number; to: number }> = []
    for (let from = 1; from <= total; from += settings.chunk)
      chunks.push({ tenant, total, from, to: Math.min(total, from + settings.chunk - 1) })
    return chunks
  })
  const benchChunks = queues[0]
  const otherChunks = queues.slice(1).flat()
  const order: typeof benchChunks = []
  while (benchChunks.length || otherChunks.length) {
    if (benchChunks.length) order.push(benchChunks.shift()!)
    if (otherChunks.length) order.push(otherChunks.shift()!)
  }
  const client = new pg.Client({ connectionString: url, options: '-c TimeZone=UTC' })
  await client.connect()
  try {
    const start = Date.now()
    let done = 0
    for (const c of order) {
      const t = Date.now()
      await client.query(chunkSql, [
        c.tenant,
        c.from,
        c.to,
        c.total,
        module.definition.version,
        prefix,
        width,
        suffix,
        JSON.stringify(seedActor)
      ])
      done += c.to - c.from + 1
      log(
        `  seeded ${c.tenant} ${c.from}–${c.to} of ${c.total} in ${since(t)} (${done.toLocaleString('en')} of ${(2 * n).toLocaleString('en')}, ${since(start)})`
      )
    }
    for (const { tenant, total } of plan)
      await client.query(
        `INSERT INTO record_sequences (tenant_id, module_key, scope, value) VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant_id, module_key, scope) DO UPDATE SET value = excluded.value`,
        [tenant, moduleKey, `${prefix}{seq}${suffix}`, total]
      )
    const v = Date.now()
    await client.query('VACUUM (ANALYZE) records, record_sequences')
    log(`  VACUUM ANALYZE in ${since(v)}`)
    const { rows } = await client.query(
      `SELECT pg_size_pretty(pg_table_size('records')) AS heap, pg_size_pretty(pg_indexes_size('records')) AS indexes`
    )
    log(`  records: ${rows[0].heap} table, ${rows[0].indexes} indexes`)
  } finally {
    await client.end()
  }
}

// ---------------------------------------------------------------- scenarios

interface Scenario {
  key: string
  label: string
  params: Record<string, string>
}

function scenarios(n: number): Scenario[] {
  const at = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')
  // Medium: a window of ~6 % of the three years; rare: a window holding ~50 of this tenant's rows.
  const mediumFrom = Date.parse('2025-03-01T00:00:00Z')
  const mediumTo = mediumFrom + Math.round(0.06 * spanSeconds * 1000)
  const rareFrom = Date.parse('2025-06-15T10:00:00Z')
  const rareTo = rareFrom + Math.round((rareRows * spanSeconds * 1000) / n)
  const s = (key: string, label: string, params: Record<string, string>): Scenario => ({ key, label, params })
  return [
    s('none', 'no filter', {}),
    s('site-high', 'site eq, high (50 %)', { 'payload[site]': values.site.high }),
    s('site-medium', 'site eq, medium (6 %)', { 'payload[site]': values.site.medium }),
    s('site-rare', 'site eq, rare (50 rows)', { 'payload[site]': values.site.rare }),
    s('site-absent', 'site eq, absent', { 'payload[site]': values.site.absent }),
    s('severity-high', 'severity in, high (94 %)', { 'payload[severity][in]': 'low,medium' }),
    s('severity-medium', 'severity in, medium (6 %)', { 'payload[severity][in]': 'high,critical' }),
    s('severity-rare', 'severity in, rare (50 rows)', { 'payload[severity][in]': 'critical' }),
    s('category-absent', 'category in, absent', { 'payload[category][in]': 'quality' }),
    s('occurred-high', 'occurredAt range, high (83 %)', { 'payload[occurredAt][gte]': '2024-07-01T00:00:00Z' }),
    s('occurred-medium', 'occurredAt range, medium (6 %)', {
      'payload[occurredAt][gte]': at(mediumFrom),
      'payload[occurredAt][lt]': at(mediumTo)
    }),
    s('occurred-rare', 'occurredAt range, rare (~50 rows)', {
      'payload[occurredAt][gte]': at(rareFrom),
      'payload[occurredAt][lt]': at(rareTo)
    }),
    s('occurred-absent', 'occurredAt range, absent', { 'payload[occurredAt][lt]': '2023-06-01T00:00:00Z' }),
    // The same ranges in the order of the field they are on: one range of its index.
    s('occurred-sorted-high', 'occurredAt range, high (83 %), sort=payload.occurredAt', {
      'payload[occurredAt][gte]': '2024-07-01T00:00:00Z',
      sort: 'payload.occurredAt'
    }),
    s('occurred-sorted-medium', 'occurredAt range, medium (6 %), sort=-payload.occurredAt', {
      'payload[occurredAt][gte]': at(mediumFrom),
      'payload[occurredAt][lt]': at(mediumTo),
      sort: '-payload.occurredAt'
    }),
    s('lead-high', 'investigationLead eq, high (50 %)', { 'payload[investigationLead]': leads.high }),
    s('lead-medium', 'investigationLead eq, medium (6 %)', { 'payload[investigationLead]': leads.medium }),
    s('lead-rare', 'investigationLead eq, rare (50 rows)', { 'payload[investigationLead]': leads.rare }),
    s('lead-absent', 'investigationLead eq, absent', { 'payload[investigationLead]': leads.absent }),
    s('body-high', 'bodyParts contains, high (15 %)', { 'payload[bodyParts][contains]': 'hands' }),
    s('body-medium', 'bodyParts contains, medium (6 %)', { 'payload[bodyParts][contains]': 'arms' }),
    s('body-rare', 'bodyParts contains, rare (50 rows)', { 'payload[bodyParts][contains]': 'internal' }),
    s('body-absent', 'bodyParts contains, absent', { 'payload[bodyParts][contains]': 'neck' }),
    s('created-high', 'created range, high (83 %)', { createdSince: '2024-07-01T00:00:00Z' }),
    s('created-medium', 'created range, medium (6 %)', { createdSince: at(mediumFrom), createdBefore: at(mediumTo) }),
    s('created-rare', 'created range, rare (~50 rows)', { createdSince: at(rareFrom), createdBefore: at(rareTo) }),
    s('created-absent', 'created range, absent', { createdBefore: '2023-06-01T00:00:00Z' }),
    s('created-sorted-medium', 'created range, medium (6 %), sort=-createdAt', {
      createdSince: at(mediumFrom),
      createdBefore: at(mediumTo),
      sort: '-createdAt'
    }),
    s('state-high', 'state, high (50 %)', { state: 'reported' }),
    s('state-medium', 'state, medium (6 %)', { state: 'investigating' }),
    s('state-rare', 'state, rare (50 rows)', { state: 'actions-pending' }),
    s('combo-site-severity', 'site high + severity in medium (3 %)', {
      'payload[site]': values.site.high,
      'payload[severity][in]': 'high,critical'
    }),
    s('combo-state-occurred', 'state medium + occurredAt medium (0.4 %)', {
      state: 'investigating',
      'payload[occurredAt][gte]': at(mediumFrom),
      'payload[occurredAt][lt]': at(mediumTo)
    }),
    ...['createdAt', '-createdAt', 'updatedAt', '-number', 'payload.occurredAt', '-payload.occurredAt'].map((sort) =>
      s(`sort${sort}`, `sort=${sort}`, { sort })
    ),
    s('search-common', 'search q=forklift (30 %)', { q: 'forklift' }),
    s('search-rare', 'search q=zurich (50 rows, Zürich)', { q: 'zurich' }),
    s('search-relevance', 'search q=zurich, sort=relevance', { q: 'zurich', sort: 'relevance' }),
    s('count-none', 'count=true, no filter', { count: 'true' }),
    s('count-medium', 'count=true, site medium (6 %)', { count: 'true', 'payload[site]': values.site.medium })
  ].filter((sc) => !opt.only || opt.only.split(',').some((k) => sc.key.startsWith(k.trim())))
}

// ---------------------------------------------------------------- measuring

interface Page {
  status: number
  ms: number
  body: any
}

interface Timing {
  p50: number
  p95: number
  samples: number
  capped: boolean
  status: number
  note?: string
}

/** Following nextCursor to the deep page took longer than --follow-budget: how far it got, and the mean time a page. */
interface NotReached {
  pages: number
  meanMs: number
}

interface Result {
  scenario: Scenario
  first: Timing
  deep: Timing | NotReached | 'n/a' | undefined
  pages?: number
}

function percentile(values: number[], p: number): number {
  if (!values.length) return NaN
  const s = [...values].sort((a, b) => a - b)
  // Nearest rank: with 30 samples, p95 is the 29th.
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}

/** What a non-200 answer says, briefly: its status and its problem's code or title. */
function statusNote(page: Page): string {
  const b = page.body ?? {}
  const detail = b.errors?.[0]?.code ?? b.code ?? b.title ?? ''
  return `${page.status}${detail ? ` ${String(detail).slice(0, 40)}` : ''}`
}

async function measure(base: string, token: string, sc: Scenario): Promise<Result> {
  const get = async (cursor?: string): Promise<Page> => {
    const q = new URLSearchParams({ moduleKey, limit: String(settings.limit), ...sc.params })
    if (cursor) q.set('cursor', cursor)
    const t = performance.now()
    const res = await fetch(`${base}/api/v1/records?${q}`, { headers: { authorization: `Bearer ${token}` } })
    const text = await res.text()
    const ms = performance.now() - t
    let body: any
    try {
      body = JSON.parse(text)
    } catch {
      body = { title: text.slice(0, 80) }
    }
    return { status: res.status, ms, body }
  }
  const time = async (cursor?: string): Promise<Timing> => {
    const start = Date.now()
    for (let i = 0; i < settings.warmup; i++) {
      const p = await get(cursor)
      if (p.status !== 200)
        return { p50: NaN, p95: NaN, samples: 0, capped: false, status: p.status, note: statusNote(p) }
    }
    const ms: number[] = []
    let capped = false
    while (ms.length < settings.samples) {
      if (ms.length && Date.now() - start > settings.budgetMs) {
        capped = true
        break
      }
      const p = await get(cursor)
      if (p.status !== 200)
        return { p50: NaN, p95: NaN, samples: 0, capped: false, status: p.status, note: statusNote(p) }
      ms.push(p.ms)
    }
    return { p50: percentile(ms, 50), p95: percentile(ms, 95), samples: ms.length, capped, status: 200 }
  }

  const started = Date.now()
  const check = await get()
  if (check.status !== 200) {
    const first: Timing = {
      p50: NaN,
      p95: NaN,
      samples: 0,
      capped: false,
      status: check.status,
      note: statusNote(check)
    }
    log(`  ${sc.label}: ${first.note} (${JSON.stringify(check.body).slice(0, 160)})`)
    return { scenario: sc, first, deep: undefined }
  }
  const first = await time()
  // The cursor of the page 1,000 deep: nextCursor followed 1,000 times, untimed.
  const follow = Date.now()
  let cursor: string | null = check.body.nextCursor
  let pages = 1
  let followMs = 0
  let stopped = false
  while (cursor && pages < settings.deep + 1) {
    if (Date.now() - follow > settings.followBudgetMs) {
      stopped = true
      break
    }
    const p = await get(cursor)
    if (p.status !== 200) {
      cursor = null
      break
    }
    followMs += p.ms
    pages++
    if (pages <= settings.deep) cursor = p.body.nextCursor
  }
  // `pages` counts page 1 and the pages read while following; the deep page is page 1,001 (after 1,000 pages).
  let deep: Result['deep'] = stopped ? { pages: pages - 1, meanMs: followMs / (pages - 1) } : 'n/a'
  let deepCursor: string | undefined
  if (pages > settings.deep && cursor) deepCursor = cursor
  const followTime = since(follow)
  if (deepCursor) deep = await time(deepCursor)
  const count = check.body.count ? ` count ${check.body.count.value}${check.body.count.exact ? '' : ' (estimate)'}` : ''
  log(
    `  ${sc.label}: first p50 ${fmt(first.p50, 1)} p95 ${fmt(first.p95, 1)} ms (${first.samples}); ` +
      (deep === 'n/a'
        ? `deep n/a (${pages} page${pages === 1 ? '' : 's'})`
        : 'meanMs' in deep
          ? `deep not reached: ${deep.pages} pages followed in ${followTime}, mean ${fmt(deep.meanMs, 1)} ms a page`
          : `deep p50 ${fmt(deep.p50, 1)} p95 ${fmt(deep.p95, 1)} ms (${deep.samples}; ${settings.deep} pages followed in ${followTime})`) +
      `${count}; ${since(started)}`
  )
  return { scenario: sc, first, deep, pages }
}

// ---------------------------------------------------------------- main

function cells(t: Result['deep']): [string, string] {
  if (t === undefined) return ['-', '-']
  if (t === 'n/a') return ['n/a', 'n/a']
  if ('meanMs' in t) return ['n/r', `(${fmt(t.meanMs, 0)}/page)`]
  if (t.status !== 200) return [t.note ?? String(t.status), '']
  const mark = t.capped ? '*' : ''
  return [`${fmt(t.p50, 1)}${mark}`, `${fmt(t.p95, 1)}${mark}`]
}

function verdict(r: Result): string {
  if (r.first.status !== 200) return `miss (${r.first.status})`
  if (r.deep && r.deep !== 'n/a' && 'meanMs' in r.deep) return 'miss'
  const timings = [r.first, ...(r.deep && r.deep !== 'n/a' ? [r.deep] : [])]
  if (timings.some((t) => t.status !== 200)) return 'miss (deep ' + timings[1].status + ')'
  return timings.every((t) => t.p95 < settings.targetMs) ? 'ok' : 'miss'
}

async function main() {
  process.chdir(projectRoot)
  const loadBefore = loadavg()[0]
  if (loadBefore > 0.5 * cpus().length)
    log(
      `warning: load average ${loadBefore.toFixed(2)} on ${cpus().length} CPU(s) before start: figures will be skewed`
    )
  log(
    `scale benchmark: ${settings.records.toLocaleString('en')} incident records in tenant ${defaultTenant} + ` +
      `${settings.records.toLocaleString('en')} over ${otherTenants.length} other tenants; ${settings.samples} samples ` +
      `after ${settings.warmup} warm-up requests per page; limit ${settings.limit}; deep = after ${settings.deep} pages` +
      `${opt.quick ? ' (quick)' : ''}`
  )
  const reused = opt['reuse-db']
  const db = reused
    ? { url: reused, name: new URL(reused).pathname.slice(1), where: 'DATABASE_URL', close: async () => undefined }
    : await benchDatabase()
  let service: Awaited<ReturnType<typeof startChild>> | undefined
  try {
    log(`database: ${db.name} on ${db.where === 'embedded' ? 'the embedded cluster (data/bench)' : 'DATABASE_URL'}`)
    let t = Date.now()
    let seedTime = 'reused'
    if (!reused) {
      await migrate(db.url)
      log(`migrated, tenants made in ${since(t)}`)
      t = Date.now()
      log('seeding:')
      await seed(db.url, settings.records)
      seedTime = since(t)
      log(`seeded in ${seedTime}`)
    }

    t = Date.now()
    service = await startChild(
      'service',
      join(projectRoot, 'bench', 'service-server.ts'),
      ['--database-url', db.url, '--tenant', defaultTenant],
      projectRoot
    )
    log(`service: ${service.url}, started in ${since(t)}; waiting for index builds:`)
    const waited = await waitForIndexBuilds(db.url, log)
    const pgVersion = await postgresVersion(db.url)

    const results: Result[] = []
    const m = Date.now()
    log('measuring:')
    for (const sc of scenarios(settings.records)) results.push(await measure(service.url, service.token!, sc))
    log(`measured in ${since(m)}`)

    const rows = [['scenario', 'first p50', 'first p95', 'deep p50', 'deep p95', 'target', 'verdict']]
    for (const r of results) {
      const [f50, f95] = cells(r.first)
      const [d50, d95] = r.first.status === 200 ? cells(r.deep) : ['', '']
      rows.push([r.scenario.label, f50, f95, d50, d95, `< ${settings.targetMs} ms p95`, verdict(r)])
    }
    const ok = results.filter((r) => verdict(r) === 'ok').length
    process.stdout.write(
      `\n${settings.records.toLocaleString('en')} records in tenant ${defaultTenant} + ${settings.records.toLocaleString('en')} in ` +
        `${otherTenants.length} other tenants; ms, ${settings.samples} sequential samples after ${settings.warmup} warm-ups; ` +
        `deep = the page after ${settings.deep} pages of ${settings.limit}; ${cpus().length} CPU(s), node ${process.version}, ` +
        `PostgreSQL ${pgVersion} (${db.where}); seed ${seedTime}, index builds waited ${(waited / 1000).toFixed(1)} s\n\n` +
        table(rows) +
        `\n\n${ok} of ${results.length} scenarios within the target. n/a: the selection has fewer than ${settings.deep + 1} pages; ` +
        `* sampling stopped after ${settings.budgetMs / 1000} s (fewer samples); n/r: the deep page not reached, ` +
        `following nextCursor stopped after ${settings.followBudgetMs / 1000} s (the mean time a page while following in brackets). Total run ${since(t0)}; ` +
        `load average ${loadBefore.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after.\n`
    )
  } finally {
    await service?.stop().catch(() => undefined)
    await db.close({ keep: opt['keep-db'], log })
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`scale benchmark failed: ${err?.stack ?? err}\n`)
    process.exit(1)
  }
)
