import { isDeepStrictEqual } from 'node:util'
import { dataObject } from '../../core/json-data.ts'

/**
 * JSON merge patch (RFC 7396) at the top level of a payload: given keys replace, null
 * removes. The result has no prototype, so a `__proto__` key (refused at the edge anyway)
 * would be an own field the schema refuses, never an inherited value a guard reads.
 */
export function mergePatch(current: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = dataObject(current)
  for (const k of Object.keys(patch)) {
    const v = patch[k]
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
    const was = Object.hasOwn(before, k) ? before[k] : undefined
    if (!isDeepStrictEqual(was, v)) changes.push({ field: k, from: was ?? null, to: v })
  }
  for (const k of Object.keys(before))
    if (!Object.hasOwn(after, k)) changes.push({ field: k, from: before[k], to: null })
  return changes
}

/** Whether a guard counts a field as filled in. */
export function hasValue(v: unknown): boolean {
  return (
    v !== undefined &&
    v !== null &&
    !(typeof v === 'string' && v.trim() === '') &&
    !(Array.isArray(v) && v.length === 0)
  )
}
