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
 * The words of a search: letters and digits, anything else separates; at least one (else a 400) and at most
 * `maxSearchWords`. In its tsquery each is a prefix and all are required, folded in SQL by the same records_fold as
 * the document.
 */
function searchWords(q: string): string[] {
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
  return words
}

/** A list's search: its module's document, the query's words as a tsquery text, and the words themselves. */
export interface Search {
  document: string
  words: string
  /** The words as given, for estimating how many records match (WordFrequencies). */
  terms: string[]
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
  const terms = searchWords(q)
  return { document, words: terms.map((w) => `'${w}':*`).join(' & '), terms }
}

/**
 * How a search finds its records:
 * - `match`: through the search index, every record that matches, then in page order. It costs what the words match:
 *   14 ms for a word 50 of a million records hold, 0.5 s for one 300,000 hold.
 * - `walk`: records in page order, each one's text searched until the page is full. It costs what it passes over:
 *   about 13 µs a record at a million (the text is read and folded per record), so 2 ms for a word 30 % of the
 *   records hold and seconds for a rare one.
 * PostgreSQL cannot choose between them: under row-level security it ignores the statistics of the search text and
 * assumes one record in 200 matches, whatever the words. The service chooses, from those same statistics (the most
 * common words of each module's text, which the index builder reads as the table's owner every minute).
 */
export type SearchPlan = 'match' | 'walk'

/** A share of the records above which a search walks: its page is full within about 2,500 records (~35 ms). */
const walkAbove = 0.02

/** Folded as records_fold folds in SQL (lower case, no accents), for comparing with the statistics' words. */
const fold = (w: string) => w.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase()

/** The most common words of each module's search text and the share of records holding each (PostgreSQL's statistics). */
export class WordFrequencies {
  private readonly byDocument = new Map<string, Array<[word: string, share: number]>>()

  /** A search text's statistics: its most common words and their shares (pg_stats_ext_exprs, most_common_elems). */
  set(document: string, words: readonly string[], shares: readonly number[]): void {
    this.byDocument.set(
      document,
      words.map((w, i) => [w, shares[i] ?? 0])
    )
  }

  /**
   * The share of records a search's words are expected to match together: for each word, the sum of the shares of the
   * common words it begins (at most 1; a word no common word begins is rare, 0); the words as independent. Undefined
   * when nothing is known of the text (no statistics yet).
   */
  share(search: Search): number | undefined {
    const common = this.byDocument.get(search.document)
    if (!common?.length) return undefined
    return search.terms.reduce((all, term) => {
      const t = fold(term)
      const one = common.reduce((sum, [word, share]) => (word.startsWith(t) ? sum + share : sum), 0)
      return all * Math.min(1, one)
    }, 1)
  }

  plan(search: Search): SearchPlan {
    return (this.share(search) ?? 0) > walkAbove ? 'walk' : 'match'
  }
}
