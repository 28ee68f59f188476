import { fieldOf } from '../../core/json-data.ts'
import { validationError } from '../../core/validation.ts'

/** Characters a reference may not hold: controls, invisible format characters (zero-width, bidi overrides), line and paragraph separators. */
const invisible = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u

/**
 * A source-system reference as it is stored and matched: Unicode NFC, so a reference
 * typed on another system (NFD, or the Kelvin sign for K) finds the record it names
 * instead of creating a second one; invisible characters are refused, since two
 * references that look the same must be the same. Throws 400 `field.invalid` at `pointer`.
 */
export function canonicalExternalRef(ref: string, pointer = '/externalRef'): string {
  const bad = invisible.exec(ref)
  if (bad) {
    const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')
    throw validationError([
      {
        pointer,
        field: fieldOf(pointer),
        code: 'text',
        detail: `contains the invisible character U+${code} at position ${bad.index + 1}; references must be visible text`
      }
    ])
  }
  return ref.normalize('NFC')
}
