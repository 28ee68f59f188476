import { clock, utcDay } from '../../clock.ts'
import { samplePayload } from '../derive/sample.ts'
import type { FieldDefinition, ModuleDefinition } from '../types.ts'
import { accessChecks } from './access-checks.ts'
import { KitClient, describeReply, Failure, type KitUser } from './client.ts'
import { outputChecks } from './output-checks.ts'
import { recordChecks } from './record-checks.ts'
import { workflowChecks } from './workflow-checks.ts'

/**
 * The module conformance kit: one module's life over HTTP, as a client of a started platform sees it
 * (records, workflow, row and field rules, bulk, exports, OpenAPI, GraphQL). `records module check`
 * runs it on a scratch database; test/conformance/modules.test.ts runs it for every module the
 * repository ships. It reaches the platform only through its URL and the two doors a target hands it
 * (a tenant API key, and new users with roles), so it needs no plugin code and lives in core.
 */

/** One check: a sentence, whether it held, and what was seen (why it failed, or what it covered). */
export interface CheckResult {
  name: string
  ok: boolean
  detail: string
}

/** A started platform and one tenant of it with the module (and the modules it references) installed. */
export interface ConformanceTarget {
  /** Where the API listens, e.g. `http://127.0.0.1:41234`. */
  url: string
  tenantId: string
  /** A tenant API key: acts as the tenant with every role, unrestricted by row and field rules. */
  adminToken: string
  /** A new user of the tenant holding exactly `roles`, with a personal token (through the platform's services). */
  newUser(roles: string[]): Promise<KitUser>
  /** The definitions installed for the tenant: the one under check, and those its record references name. */
  modules: readonly ModuleDefinition[]
}

export interface KitOptions {
  /** Transitions checked at most (default 40): a definition with more is checked in part, and the result says so. */
  maxTransitions?: number
  /** How long an export may take to complete (default 60 s). */
  exportTimeoutMs?: number
  /** Each HTTP request's timeout (default 30 s). */
  requestTimeoutMs?: number
}

/** What every check is handed: the client, the module, and ways to make records and users. */
export interface KitContext {
  m: ModuleDefinition
  http: KitClient
  admin: string
  options: Required<KitOptions>
  newUser(roles: string[]): Promise<KitUser>
  /** A payload: the required fields only, or every field; user fields name `userId` (a user of the tenant). */
  sample(all: boolean, userId?: string, fields?: readonly FieldDefinition[]): Record<string, unknown>
  /** Creates a record of the module (as `token`, by default the tenant key) and returns it; a refusal is a Failure. */
  create(payload: Record<string, unknown>, token?: string): Promise<KitRecord>
  /** Runs one check: a thrown Failure (or any error) makes it fail with the message as detail. */
  check(name: string, run: () => Promise<string | void>): Promise<boolean>
  results: CheckResult[]
}

export interface KitRecord {
  id: string
  state: string
  version: number
  payload: Record<string, unknown>
  [key: string]: unknown
}

/** Record references (in groups too) of a field list: the modules they name. */
function referencedModules(fields: readonly FieldDefinition[]): string[] {
  return fields.flatMap((f) =>
    f.type === 'recordRef' ? [f.module] : f.type === 'group' ? referencedModules(f.fields) : []
  )
}

/** Runs the kit for the module `moduleKey` of `target`: one result per check, in order. */
export async function runConformance(
  target: ConformanceTarget,
  moduleKey: string,
  options: KitOptions = {}
): Promise<CheckResult[]> {
  const opts: Required<KitOptions> = {
    maxTransitions: options.maxTransitions ?? 40,
    exportTimeoutMs: options.exportTimeoutMs ?? 60_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000
  }
  const byKey = new Map(target.modules.map((d) => [d.key, d]))
  const m = byKey.get(moduleKey)
  if (!m) throw new Error(`runConformance: module "${moduleKey}" is not among the target's modules`)
  const http = new KitClient(target.url, opts.requestTimeoutMs)
  const admin = target.adminToken
  const results: CheckResult[] = []
  const recordIds: Record<string, string> = {}
  // Sample dates a year ahead: a module's date rules (a review date in the future) accept them.
  const day = utcDay(new Date(clock().now().getTime() + 365 * 86_400_000))
  let defaultUser: KitUser | undefined
  // User fields no row rule reads each name a person of their own, so that rules between them (`reviewer != assessor`,
  // `issuer != requestedBy`) hold in the samples; those a row rule reads name the user a sample is for, who must see
  // the record (the workflow and row rule checks rely on it).
  const rowRuleFields = new Set(
    Object.values(m.rowAccess ?? {}).flatMap((conditions) => conditions.flatMap((c) => ('field' in c ? [c.field] : [])))
  )
  const people: Record<string, string> = {}

  // A live record of each module a reference names (made from its required fields, its own references first).
  const making = new Set<string>()
  async function ensureRecord(key: string): Promise<void> {
    if (recordIds[key] || making.has(key)) return
    const d = byKey.get(key)
    if (!d) throw new Failure(`module "${key}", which a record reference names, is not installed beside it`)
    making.add(key)
    for (const ref of referencedModules(d.fields)) await ensureRecord(ref)
    const payload = samplePayload(d.fields, { recordIds, userId: defaultUser!.id, people, day }, false)
    const res = await http.request('POST', '/api/v1/records', { token: admin, body: { moduleKey: key, payload } })
    if (res.status !== 201) throw new Failure(`a record of "${key}" to refer to: ${describeReply(res)}`)
    recordIds[key] = res.body.id
  }

  const ctx: KitContext = {
    m,
    http,
    admin,
    options: opts,
    newUser: (roles) => target.newUser(roles),
    results,
    sample: (all, userId, fields = m.fields) =>
      samplePayload(fields, { recordIds, userId: userId ?? defaultUser!.id, people, day }, all),
    async create(payload, token = admin) {
      const res = await http.request('POST', '/api/v1/records', { token, body: { moduleKey: m.key, payload } })
      if (res.status !== 201) throw new Failure(`create: ${describeReply(res)}`)
      return res.body as KitRecord
    },
    async check(name, run) {
      try {
        const detail = await run()
        results.push({ name, ok: true, detail: detail ?? '' })
        return true
      } catch (err) {
        results.push({ name, ok: false, detail: err instanceof Error ? err.message : String(err) })
        return false
      }
    }
  }

  const ready = await ctx.check('makes the users and the referenced records it needs', async () => {
    defaultUser = await target.newUser([])
    for (const f of m.fields)
      if (f.type === 'user' && !rowRuleFields.has(f.key)) people[f.key] = (await target.newUser([])).id
    const refs = [...new Set(referencedModules(m.fields))]
    for (const key of refs) await ensureRecord(key)
    return refs.length ? `a record of ${refs.join(', ')}` : 'no record references'
  })
  if (!ready) return results
  await recordChecks(ctx)
  await workflowChecks(ctx)
  await accessChecks(ctx)
  await outputChecks(ctx)
  return results
}
