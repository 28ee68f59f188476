import type { FieldDefinition, FieldType, ModuleDefinition } from '../types.ts'
import { separates } from '../duties.ts'

type Of<T extends FieldType> = Extract<FieldDefinition, { type: T }>
export interface SampleContext {
  /** Ids of existing records per module, for record references. */
  recordIds: Record<string, string>
  userId: string
  /** Top-level user fields that name a person of their own instead of `userId` (the conformance kit's). */
  people?: Readonly<Record<string, string>>
  /**
   * Stands in for a required reference to a module with no id in `recordIds` (documentation
   * examples); an optional one is left out instead, so the example stays valid as sent.
   */
  placeholderId?: string
  /**
   * The day date and date-time samples take (`YYYY-MM-DD`); a fixed day when absent (documentation examples). The
   * conformance kit gives one ahead of the clock, which rules such as `reviewDate > today()` accept.
   */
  day?: string
  /** The hour of a date-time sample (8 when absent); samplePayload sets it per date-time field. */
  hour?: number
}

const firstOption = (f: { options: Array<string | { value: string }> }) => {
  const o = f.options[0]
  return typeof o === 'string' ? o : o.value
}

/** One row per field type: a valid example value. Feeds documentation examples and the module conformance suite. */
export const fieldToSample: { [T in FieldType]: (f: Of<T>, ctx: SampleContext) => unknown } = {
  text: (f) => (f.pattern ? undefined : `Example ${f.label ?? f.key}`.slice(0, f.maxLength ?? 500)),
  longText: (f) => `Example ${(f.label ?? f.key).toLowerCase()}, written in full.`,
  number: (f) => f.minimum ?? (f.maximum !== undefined ? Math.min(f.maximum, 1.5) : 1.5),
  integer: (f) => f.minimum ?? (f.maximum !== undefined ? Math.min(f.maximum, 1) : 1),
  boolean: () => true,
  date: (_f, ctx) => ctx.day ?? '2026-03-02',
  datetime: (_f, ctx) => `${ctx.day ?? '2026-03-02'}T${String(ctx.hour ?? 8).padStart(2, '0')}:30:00Z`,
  singleChoice: (f) => firstOption(f),
  multipleChoice: (f) => [firstOption(f)],
  user: (f, ctx) => (ctx.people && Object.hasOwn(ctx.people, f.key) ? ctx.people[f.key] : ctx.userId),
  recordRef: (f, ctx) => ctx.recordIds[f.module] ?? (f.required ? ctx.placeholderId : undefined),
  group: (f, ctx) => [samplePayload(f.fields, ctx, true)],
  location: () => ({ latitude: 53.7997, longitude: -1.5492, label: 'Gate 3' })
}

/** A computed field has no sample: the platform writes it, and refuses it from clients (core/modules/field-rules.ts). */
const sampleOf = (f: FieldDefinition, ctx: SampleContext) =>
  (f as { computed?: string }).computed !== undefined
    ? undefined
    : (fieldToSample[f.type] as (f: FieldDefinition, c: SampleContext) => unknown)(f, ctx)

/** A payload with every field (or only the required ones) filled with a valid example. */
export function samplePayload(
  fields: readonly FieldDefinition[],
  ctx: SampleContext,
  all: boolean
): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  let datetimes = 0
  for (const f of fields) {
    // Date-times an hour apart in declaration order (counted whether sent or not, so the minimal and the full sample
    // agree): a rule that an end comes after a start declared before it (`validTo > validFrom`) holds in the samples.
    const at = f.type === 'datetime' ? { ...ctx, hour: 8 + Math.min(datetimes++, 15) } : ctx
    if (!all && !f.required) continue
    const v = sampleOf(f, at)
    if (v !== undefined) out[f.key] = v
  }
  return out
}

/**
 * The fields of `samplePayload(fields, ctx, all)` that need an existing record (required
 * references, in groups too), as dotted paths: empty when the sample is valid on a fresh tenant.
 */
export function sampleReferences(fields: readonly FieldDefinition[], all: boolean, prefix = ''): string[] {
  return fields.flatMap((f) => {
    if (!all && !f.required) return []
    if (f.type === 'recordRef') return f.required ? [`${prefix}${f.key}`] : []
    if (f.type === 'group') return sampleReferences(f.fields, true, `${prefix}${f.key}[].`)
    return []
  })
}

/** A field whose sample stands alone: no reference to another record or a user, no role needed to write it. */
const standalone = (f: FieldDefinition) =>
  f.type !== 'recordRef' && f.type !== 'user' && !f.access && sampleReferences([f], true).length === 0

/**
 * A merge patch for a record made from `example`: the first optional field that stands alone,
 * filled in (else the first field of the example, unchanged).
 */
export function samplePatch(
  fields: readonly FieldDefinition[],
  example: Record<string, unknown>,
  ctx: SampleContext
): Record<string, unknown> {
  for (const f of fields) {
    const v = f.key in example || !standalone(f) ? undefined : sampleOf(f, ctx)
    if (v !== undefined) return { [f.key]: v }
  }
  const [key] = Object.keys(example)
  return key === undefined ? {} : { [key]: example[key] }
}

/**
 * A transition a record made from `example` can fire at once: from the initial state, open to
 * its creator, with the fields its target needs either in the example or standing alone (then
 * sent along as `payload`). Falls back to the first transition from the initial state.
 */
export function sampleTransition(
  def: ModuleDefinition,
  example: Record<string, unknown>,
  ctx: SampleContext
): { transition: string; payload?: Record<string, unknown> } | undefined {
  const fields = new Map(def.fields.map((f) => [f.key, f]))
  const fromStart = def.workflow.transitions.filter((t) => t.from.includes(def.workflow.initial))
  next: for (const t of fromStart) {
    if (separates(t)) continue
    const payload: Record<string, unknown> = {}
    for (const key of [...(def.workflow.states.find((s) => s.key === t.to)?.requires ?? []), ...(t.requires ?? [])]) {
      if (key in example) continue
      const f = fields.get(key)
      const v = f && standalone(f) ? sampleOf(f, ctx) : undefined
      if (v === undefined) continue next
      payload[key] = v
    }
    return { transition: t.key, ...(Object.keys(payload).length ? { payload } : {}) }
  }
  const first = fromStart[0] ?? def.workflow.transitions[0]
  return first && { transition: first.key }
}

/** Modules ordered so that every module comes after the modules its record references point to. */
export function referenceOrder(modules: readonly ModuleDefinition[]): ModuleDefinition[] {
  const byKey = new Map(modules.map((m) => [m.key, m]))
  const done = new Set<string>()
  const out: ModuleDefinition[] = []
  const visit = (m: ModuleDefinition) => {
    if (done.has(m.key)) return
    done.add(m.key)
    for (const f of m.fields) if (f.type === 'recordRef' && byKey.has(f.module)) visit(byKey.get(f.module)!)
    out.push(m)
  }
  modules.forEach(visit)
  return out
}
