import { isDeepStrictEqual } from 'node:util'

/** JSON merge patch (RFC 7396) at the top level of a payload: given keys replace, null removes. */
export function mergePatch(current: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...current }
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = v
  }
  return out
}

export interface FieldChange {
  field: string
  from: unknown
  to: unknown
}

/** The field-level diff between two payloads, in key order of the second then removed keys. */
export function diffPayload(before: Record<string, unknown>, after: Record<string, unknown>): FieldChange[] {
  const changes: FieldChange[] = []
  for (const [k, v] of Object.entries(after)) {
    if (!isDeepStrictEqual(before[k], v)) changes.push({ field: k, from: before[k] ?? null, to: v })
  }
  for (const k of Object.keys(before)) if (!(k in after)) changes.push({ field: k, from: before[k], to: null })
  return changes
}

/** Whether a guard counts a field as filled in. */
export function hasValue(v: unknown): boolean {
  return v !== undefined && v !== null && !(typeof v === 'string' && v.trim() === '') && !(Array.isArray(v) && v.length === 0)
}
