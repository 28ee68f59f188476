import { fieldFinding } from '../../core/modules/derive/filters.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { validationError } from '../../core/validation.ts'

/**
 * Text search (`q`): PostgreSQL full text over a module's searchable fields, with the `simple` configuration (words as
 * written, no stemming) folded to lower case without accents (records_fold), each word of the query matching a word
 * that starts with it. Full text rather than trigrams: a GIN index of words is a fraction of a trigram index's size
 * and write cost at a million records, ranks by how often and how close the words occur, and `simple` needs no
 * language per tenant: one index serves every tenant, whatever language its people write in (a stemming language
 * would need an index per language and would mangle names, part numbers and site codes).
 */

/** The document a module's records are searched by: its searchable fields, in declaration order; undefined when none. */
export function searchDocument(module: RegisteredModule): string | undefined {
  const keys = module.definition.fields.filter((f) => fieldFinding(f).searchable).map((f) => f.key)
  if (!keys.length) return undefined
  // Keys are validated camelCase identifiers (the definition's key pattern).
  return `records_document(payload, ARRAY[${keys.map((k) => `'${k}'`).join(', ')}]::text[])`
}

export const maxSearchWords = 8

/**
 * The tsquery text of a search: its words (letters and digits; anything else separates), each a prefix, all required.
 * The words are folded in SQL by the same records_fold as the document. A search with no word is a 400.
 */
export function searchQuery(q: string): string {
  const words = q
    .normalize('NFC')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
  if (!words.length || words.length > maxSearchWords)
    throw validationError([
      {
        pointer: '/q',
        field: 'q',
        code: 'search',
        detail: words.length
          ? `has ${words.length} words; at most ${maxSearchWords}`
          : 'must hold at least one word (letters or digits)'
      }
    ])
  return words.map((w) => `'${w}':*`).join(' & ')
}

/** A list's search: its module's document and the query's words as a tsquery text. */
export interface Search {
  document: string
  words: string
}

/** A list's search (`q`): the module's document and the query's words; a 400 when the module has nothing to search in. */
export function searchOf(q: string | undefined, module: RegisteredModule): Search | undefined {
  if (q === undefined) return undefined
  const document = searchDocument(module)
  if (!document)
    throw validationError([
      {
        pointer: '/q',
        field: 'q',
        code: 'search',
        detail: `module "${module.definition.key}" has no searchable field to search in`
      }
    ])
  return { document, words: searchQuery(q) }
}
