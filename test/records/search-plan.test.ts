import t from '../helpers/tap.ts'
import { WordFrequencies, type Search } from '../../plugins/records/records.search.ts'

/**
 * How a search reads its records is chosen from the statistics of its module's text (records.search.ts): a walk in
 * page order when its words are expected in more than 2 % of the records, the search index otherwise.
 */
const document = 'records_document(payload, ARRAY[title]::text[])'
const search = (...terms: string[]): Search => ({ document, words: '', terms })
const words = new WordFrequencies()
words.set(document, ['forklift', 'forklifts', 'fire', 'zone', 'zurich'], [0.3, 0.05, 0.04, 0.01, 0.03])

t.test('a word is as common as the common words it begins, together', async (t) => {
  t.equal(words.share(search('forklift')), 0.35, 'forklift and forklifts')
  t.ok(Math.abs(words.share(search('f'))! - 0.39) < 1e-9, 'every word in f')
  t.equal(words.share(search('FIRE')), 0.04, 'in any case')
  t.equal(
    words.share(search('Zürich')),
    0.03,
    'without its accents: the statistics hold words as records_fold folds them'
  )
})

t.test('words the statistics do not name are rare; several words are taken as independent', async (t) => {
  t.equal(words.share(search('gdansk')), 0)
  t.equal(words.share(search('forklift', 'gdansk')), 0)
  t.ok(Math.abs(words.share(search('forklift', 'fire'))! - 0.35 * 0.04) < 1e-9, 'both: the product of their shares')
  t.equal(words.plan(search('forklift')), 'walk')
  t.equal(words.plan(search('zone')), 'match')
  t.equal(words.plan(search('forklift', 'fire')), 'match', 'together they are rare: 1.4 %')
})

t.test('a share is never above all the records, and an unknown text is always matched through its index', async (t) => {
  const many = new WordFrequencies()
  many.set(document, ['aa', 'ab', 'ac'], [0.6, 0.5, 0.4])
  t.equal(many.share(search('a')), 1)
  t.equal(many.share({ document: 'another', words: '', terms: ['a'] }), undefined, 'no statistics for that text')
  t.equal(many.plan({ document: 'another', words: '', terms: ['a'] }), 'match')
})
