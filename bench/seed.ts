/**
 * Seeds incident records for one tenant in a single INSERT ... SELECT generate_series:
 * each record gets its 'created' activity entry (changes = every payload field, as a
 * real create logs them), numbers follow the module pattern, and record_sequences is
 * set so that numbering through the API continues after the seeded ones.
 *
 * As a script: node --import tsx bench/seed.ts [--count 100000] [--tenant bench]
 *   with DATABASE_URL set; it migrates and syncs the tenant first (as a service start would).
 */
import { parseArgs } from 'node:util'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { loadConfig } from '../core/config.ts'
import { loadModules } from '../core/modules/registry.ts'
import { benchModules, defaultTenant } from './common.ts'

export interface SeedResult {
  count: number
  firstSeq: number
  lastNumber: string
  ms: number
}

const seedActor = { type: 'system', id: 'bench-seed', name: 'benchmark seed' }

/** Inserts `count` live incidents (state 'reported') for `tenantId`; the tenant must exist with the module installed. */
export async function seedIncidents(
  url: string,
  options: { tenantId?: string; count?: number; moduleKey?: string } = {}
): Promise<SeedResult> {
  const tenantId = options.tenantId ?? defaultTenant
  const count = options.count ?? 100_000
  const moduleKey = options.moduleKey ?? 'incident'
  const registry = await loadModules(loadConfig({ database: { url } }).modules)
  const module = registry.get(moduleKey)
  if (!module) throw new Error(`seed: no module "${moduleKey}"`)
  const { prefix, suffix, width } = module.numberPattern.render(new Date())
  const scope = `${prefix}{seq}${suffix}`

  const started = Date.now()
  const client = new pg.Client({ connectionString: url, options: '-c TimeZone=UTC' })
  await client.connect()
  try {
    await client.query('BEGIN')
    // Continue after whatever the counter already says (and lock it while we seed).
    const { rows: cur } = await client.query(
      `INSERT INTO record_sequences (tenant_id, module_key, scope, value) VALUES ($1, $2, $3, 0)
       ON CONFLICT (tenant_id, module_key, scope) DO UPDATE SET value = record_sequences.value
       RETURNING value::int AS v`,
      [tenantId, moduleKey, scope]
    )
    const from: number = cur[0].v
    const { rows } = await client.query(
      `WITH src AS (
         SELECT g, now() - make_interval(secs => ($3::int + $4::int - g)) AS ts,
           jsonb_build_object(
             'title', 'Seeded incident ' || g || ': ' || (ARRAY['forklift clipped racking', 'slip on wet floor', 'chemical drum leak', 'door left unlocked', 'ladder fall', 'mislabelled batch'])[1 + g % 6],
             'description', repeat('Reported during the shift by the area supervisor; the area was made safe and the team briefed. ', 1 + g % 4),
             'occurredAt', to_char(timestamp '2026-01-01' + make_interval(days => g % 300, secs => g % 86400), 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
             'site', (ARRAY['Leeds DC', 'Bristol Plant', 'Glasgow Yard', 'Dublin Office', 'Rotterdam Hub'])[1 + g % 5],
             'category', (ARRAY['injury', 'near-miss', 'property-damage', 'environmental', 'security', 'quality'])[1 + g % 6],
             'severity', (ARRAY['low', 'medium', 'high', 'critical'])[1 + g % 4]
           ) || CASE WHEN g % 6 = 0 THEN jsonb_build_object('injuredPeople', 1 + g % 3, 'bodyParts', jsonb_build_array('hands')) ELSE '{}'::jsonb END AS payload
         FROM generate_series($3::int + 1, $3::int + $4::int) AS g
       ),
       r AS (
         INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by, created_at, updated_at)
         SELECT $1, $2, $5, $6 || CASE WHEN length(g::text) >= $7 THEN g::text ELSE lpad(g::text, $7, '0') END || $8,
                $9, payload, $10::jsonb, $10::jsonb, ts, ts
         FROM src ORDER BY g
         RETURNING tenant_id, id, payload, created_by, created_at, seq, number
       ),
       a AS (
         INSERT INTO record_activity (tenant_id, record_id, at, actor, action, changes)
         SELECT r.tenant_id, r.id, r.created_at, r.created_by, 'created',
                (SELECT jsonb_agg(jsonb_build_object('field', e.key, 'from', NULL, 'to', e.value)) FROM jsonb_each(r.payload) e)
         FROM r ORDER BY r.seq
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM a)::int AS activity, min(seq)::bigint AS first_seq,
              (SELECT number FROM r ORDER BY seq DESC LIMIT 1) AS last_number, count(*)::int AS n FROM r`,
      [
        tenantId,
        moduleKey,
        from,
        count,
        module.definition.version,
        prefix,
        width,
        suffix,
        module.definition.workflow.initial,
        JSON.stringify(seedActor)
      ]
    )
    await client.query(
      'UPDATE record_sequences SET value = $4 WHERE tenant_id = $1 AND module_key = $2 AND scope = $3',
      [tenantId, moduleKey, scope, from + count]
    )
    await client.query('COMMIT')
    // Fresh statistics and a visibility map, so both servers start from the same planned, vacuumed tables.
    await client.query('VACUUM (ANALYZE) records, record_activity, record_sequences')
    return {
      count: rows[0].n,
      firstSeq: Number(rows[0].first_seq),
      lastNumber: rows[0].last_number,
      ms: Date.now() - started
    }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw err
  } finally {
    await client.end()
  }
}

/** `n` random ids of live records of the tenant's module (the GET scenario rotates through them). */
export async function randomRecordIds(
  url: string,
  n: number,
  options: { tenantId?: string; moduleKey?: string } = {}
): Promise<string[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query(
      'SELECT id FROM records WHERE tenant_id = $1 AND module_key = $2 AND deleted_at IS NULL ORDER BY random() LIMIT $3',
      [options.tenantId ?? defaultTenant, options.moduleKey ?? 'incident', n]
    )
    return rows.map((r) => r.id as string)
  } finally {
    await client.end()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { count: { type: 'string' }, tenant: { type: 'string' } } })
  const url = process.env.DATABASE_URL
  if (!url) throw new Error('seed: set DATABASE_URL')
  const tenantId = values.tenant ?? defaultTenant
  const { createPlatform } = await import('../core/app.ts')
  const { plugins } = await import('../plugins/index.ts')
  // Migrate and create the tenant with its modules, exactly as the service start does.
  const platform = await createPlatform(
    loadConfig({
      jobs: { enabled: false },
      logLevel: 'error',
      tenants: { [tenantId]: { name: 'Bench', modules: benchModules } },
      database: { url }
    }),
    plugins,
    { limiter: false }
  )
  await platform.db.close()
  const r = await seedIncidents(url, { tenantId, count: Number(values.count ?? 100_000) })
  process.stdout.write(
    `seeded ${r.count} incident records for tenant ${tenantId} in ${r.ms} ms (last number ${r.lastNumber})\n`
  )
}
