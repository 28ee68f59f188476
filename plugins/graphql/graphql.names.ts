/** GraphQL names (letters, digits and underscores, not starting with a digit) derived from module keys, field keys and option values. */

/** `corrective-action` → `CorrectiveAction`, `occurredAt` → `OccurredAt`. */
export function pascal(key: string): string {
  const out = key
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((p) => p[0].toUpperCase() + p.slice(1))
    .join('')
  return /^[A-Za-z_]/.test(out) ? out : `_${out}`
}

/** `corrective-action` → `correctiveAction`. */
export function camel(key: string): string {
  const p = pascal(key)
  return p[0] === '_' ? p : p[0].toLowerCase() + p.slice(1)
}

/** `incident` → `incidents`, `inspection` → `inspections`, `safety-audit` → `safetyAudits`, `hazard-boss` → `hazardBosses`. */
export function plural(name: string): string {
  if (/(s|x|z|ch|sh)$/.test(name)) return `${name}es`
  if (/[^aeiou]y$/.test(name)) return `${name.slice(0, -1)}ies`
  return `${name}s`
}

/**
 * Enum value names for option values, in order: `property-damage` → `PROPERTY_DAMAGE`,
 * `nearMiss` → `NEAR_MISS`, `3rd-party` → `_3RD_PARTY`. Two values that would read the
 * same get a numeric suffix, so every value keeps a name.
 */
export function enumNames(values: readonly string[]): string[] {
  const seen = new Set<string>()
  return values.map((v) => {
    let name = v
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .replace(/[^A-Za-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .toUpperCase()
    if (!name) name = 'EMPTY'
    if (/^[0-9]/.test(name)) name = `_${name}`
    let unique = name
    for (let i = 2; seen.has(unique); i++) unique = `${name}_${i}`
    seen.add(unique)
    return unique
  })
}

/**
 * The root fields of each module: one record (`incident`) and a page of them (`incidents`).
 * A name the schema already has (`record`, `modules`, `module`, `me`, `export`) or one a
 * module before took gets `Record` after the module name (`moduleRecord`, `moduleRecords`).
 */
export function moduleFieldNames(moduleKeys: readonly string[]): Map<string, { one: string; many: string }> {
  const taken = new Set(['record', 'modules', 'module', 'me', 'export'])
  const out = new Map<string, { one: string; many: string }>()
  for (const key of [...moduleKeys].sort()) {
    let one = camel(key)
    let many = plural(one)
    if (taken.has(one) || taken.has(many) || one === many) {
      one = `${one}Record`
      many = `${one}s`
    }
    taken.add(one)
    taken.add(many)
    out.set(key, { one, many })
  }
  return out
}
