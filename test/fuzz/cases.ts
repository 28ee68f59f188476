import fc from 'fast-check'
import type { Base } from './bases.ts'
import type { Kind } from './samples.ts'
import {
  headerValues,
  keys,
  lookalikes,
  ndjsonBodies,
  queryShapes,
  rawBodies,
  values,
  wireStrings,
  wireVariants
} from './hostile.ts'

/**
 * A generated request: an operation's valid base, who sends it, and up to three mutations.
 * Mutations hold indexes into the catalogues of hostile.ts (and into the base's places), so
 * they shrink towards the mildest value and the first place, and read the same for every base.
 */
export type Mutation =
  | { at: 'body'; how: 'set'; target: number; value: number; typed: boolean; only?: Kind }
  | { at: 'body'; how: 'key'; target: number; key: number; value: number }
  | { at: 'body'; how: 'drop'; target: number }
  | { at: 'body'; how: 'lookalike'; target: number; variant: number }
  | { at: 'body'; how: 'smuggle'; target: number; via: '__proto__' | 'constructor.prototype' }
  | { at: 'body'; how: 'raw'; body: number }
  | { at: 'query'; how: 'set'; name: number; value: number }
  | { at: 'query'; how: 'variant'; name: number; variant: number }
  | { at: 'query'; how: 'shape'; name: number; shape: number; value: number }
  | { at: 'path'; how: 'set'; name: number; value: number }
  | { at: 'path'; how: 'ref'; name: number; ref: number }
  | { at: 'path'; how: 'variant'; name: number; variant: number }
  | { at: 'header'; how: 'set' | 'twice'; name: string; value: number }

export type Caller = 'api-key' | 'narrow'

export interface Case {
  base: Base
  caller: Caller
  /** Idempotency-Key, for operations that declare one: none, a new key, or one used before. */
  key: 'none' | 'fresh' | 'reused'
  mutations: Mutation[]
}

/** Pooled ids a path parameter may be switched to: other kinds, other modules, deleted, another tenant's. */
export const pathRefs = [
  '@record:incident:1',
  '@record:deleted',
  '@record:other-tenant',
  '@attachment:ready',
  '@attachment:pending',
  '@export',
  '@token:1',
  '@record:inspection:0',
  '@record:corrective-action:0'
]

const nat = (n: number) => fc.nat({ max: n - 1 })
const place = fc.nat({ max: 1_000 })

function bodyMutations(base: Base): Array<{ weight: number; arbitrary: fc.Arbitrary<Mutation> }> {
  const raws = base.body?.kind === 'ndjson' ? ndjsonBodies : rawBodies
  const raw = fc.record({ at: fc.constant('body' as const), how: fc.constant('raw' as const), body: nat(raws.length) })
  if (!base.body || base.body.kind === 'bytes') return [{ weight: 1, arbitrary: raw }]
  const value = fc.nat({ max: 1_000 })
  /** A value of the kind a place expects, at a place of that kind: free text gets NUL, numbers 1e400. */
  const setOf = (only: Kind) =>
    fc.record({
      at: fc.constant('body' as const),
      how: fc.constant('set' as const),
      target: place,
      value,
      typed: fc.constant(true),
      only: fc.constant(only)
    })
  return [
    {
      weight: 3,
      arbitrary: fc.record({
        at: fc.constant('body' as const),
        how: fc.constant('set' as const),
        target: place,
        value,
        typed: fc.boolean()
      })
    },
    { weight: 4, arbitrary: setOf('text') },
    { weight: 2, arbitrary: setOf('number') },
    { weight: 1, arbitrary: setOf('array') },
    { weight: 1, arbitrary: setOf('object') },
    {
      weight: 2,
      arbitrary: fc.record({
        at: fc.constant('body' as const),
        how: fc.constant('key' as const),
        target: place,
        key: nat(keys.length),
        value: nat(values.length)
      })
    },
    {
      weight: 1,
      arbitrary: fc.record({ at: fc.constant('body' as const), how: fc.constant('drop' as const), target: place })
    },
    {
      weight: 2,
      arbitrary: fc.record({
        at: fc.constant('body' as const),
        how: fc.constant('lookalike' as const),
        target: place,
        variant: nat(lookalikes.length)
      })
    },
    {
      weight: 3,
      arbitrary: fc.record({
        at: fc.constant('body' as const),
        how: fc.constant('smuggle' as const),
        target: place,
        via: fc.constantFrom('__proto__' as const, 'constructor.prototype' as const)
      })
    },
    { weight: 2, arbitrary: raw }
  ]
}

function otherMutations(base: Base): Array<{ weight: number; arbitrary: fc.Arbitrary<Mutation> }> {
  const out: Array<{ weight: number; arbitrary: fc.Arbitrary<Mutation> }> = []
  const query = fc.oneof(
    fc.record({
      at: fc.constant('query' as const),
      how: fc.constant('set' as const),
      name: place,
      value: nat(wireStrings.length)
    }),
    fc.record({
      at: fc.constant('query' as const),
      how: fc.constant('variant' as const),
      name: place,
      variant: nat(wireVariants.length)
    }),
    fc.record({
      at: fc.constant('query' as const),
      how: fc.constant('shape' as const),
      name: place,
      shape: nat(queryShapes.length),
      value: nat(wireStrings.length)
    })
  )
  out.push({ weight: base.op.params.some((p) => p.in === 'query') ? 3 : 1, arbitrary: query })
  const pathNames = Object.keys(base.path).length
  if (pathNames) {
    out.push({
      weight: 3,
      arbitrary: fc.oneof(
        fc.record({
          at: fc.constant('path' as const),
          how: fc.constant('set' as const),
          name: place,
          value: nat(wireStrings.length)
        }),
        fc.record({
          at: fc.constant('path' as const),
          how: fc.constant('ref' as const),
          name: place,
          ref: nat(pathRefs.length)
        }),
        fc.record({
          at: fc.constant('path' as const),
          how: fc.constant('variant' as const),
          name: place,
          variant: nat(wireVariants.length)
        })
      )
    })
  }
  // The headers the operation declares come up three times as often as the others.
  const names = Object.keys(headerValues).flatMap((n) =>
    base.headers.includes(n) || (n === 'Content-Type' && base.body) ? [n, n, n] : [n]
  )
  const header = fc.constantFrom(...names).chain((name) =>
    fc.record({
      at: fc.constant('header' as const),
      how: fc.constantFrom('set' as const, 'twice' as const),
      name: fc.constant(name),
      value: nat(headerValues[name].length)
    })
  )
  out.push({ weight: 3, arbitrary: header })
  return out
}

/**
 * Cases of one operation: one of its bases, mostly one mutation (several invalid values in one
 * request are refused for the first, so a lone mutation reaches deeper code), mostly the
 * tenant API key (the narrowed service account half the time on the tokens operations).
 */
export function caseArbitrary(bases: Base[]): fc.Arbitrary<Case> {
  return fc.constantFrom(...bases).chain((base) => {
    const mutation = fc.oneof(...bodyMutations(base), ...otherMutations(base))
    const narrowWeight = base.op.path.startsWith('/api/v1/tokens') ? 4 : 1
    return fc.record({
      base: fc.constant(base),
      caller: fc.oneof(
        { weight: 4, arbitrary: fc.constant<Caller>('api-key') },
        { weight: narrowWeight, arbitrary: fc.constant<Caller>('narrow') }
      ),
      key: base.headers.includes('Idempotency-Key')
        ? fc.oneof(
            { weight: 4, arbitrary: fc.constant('none' as const) },
            { weight: 3, arbitrary: fc.constant('fresh' as const) },
            { weight: 1, arbitrary: fc.constant('reused' as const) }
          )
        : fc.constant('none' as const),
      // Shrinks to fewer mutations, and to none (the valid base) when that fails too.
      mutations: fc.oneof(
        { withCrossShrink: true },
        { weight: 1, arbitrary: fc.constant([] as Mutation[]) },
        { weight: 6, arbitrary: fc.tuple(mutation).map((m): Mutation[] => m) },
        { weight: 3, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) }
      )
    })
  })
}
