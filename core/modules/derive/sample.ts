import type { FieldDefinition, FieldType, ModuleDefinition } from '../types.ts'

type Of<T extends FieldType> = Extract<FieldDefinition, { type: T }>
export interface SampleContext {
  /** Ids of existing records per module, for record references. */
  recordIds: Record<string, string>
  userId: string
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
  date: () => '2026-03-02',
  datetime: () => '2026-03-02T08:30:00Z',
  singleChoice: (f) => firstOption(f),
  multipleChoice: (f) => [firstOption(f)],
  user: (_f, ctx) => ctx.userId,
  recordRef: (f, ctx) => ctx.recordIds[f.module],
  group: (f, ctx) => [samplePayload(f.fields, ctx, true)],
  location: () => ({ latitude: 53.7997, longitude: -1.5492, label: 'Gate 3' })
}

/** A payload with every field (or only the required ones) filled with a valid example. */
export function samplePayload(fields: readonly FieldDefinition[], ctx: SampleContext, all: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const f of fields) {
    if (!all && !f.required) continue
    const v = (fieldToSample[f.type] as (f: FieldDefinition, c: SampleContext) => unknown)(f, ctx)
    if (v !== undefined) out[f.key] = v
  }
  return out
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
