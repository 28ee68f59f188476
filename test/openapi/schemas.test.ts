import t from '../helpers/tap.ts'
import { loadConfig } from '../../core/config.ts'
import { loadModules } from '../../core/modules/registry.ts'
import { resolveLocal, type Json } from '../../core/openapi/builder.ts'
import { buildDocument } from '../../core/openapi/document.ts'
import { descriptionsOf } from '../../core/plugin.ts'
import { plugins } from '../../plugins/index.ts'

const describes = descriptionsOf(plugins)

// Built as the service builds them: generic, and for a tenant with every bundled module.
const config = loadConfig({})
const modules = (await loadModules(config.modules)).all()
const build = (tenant?: { id: string; name: string; modules: typeof modules }) =>
  buildDocument({
    config,
    describes,
    publicUrl: 'https://records.example.com',
    errorsUrl: 'https://records.example.com/errors',
    tenant
  })
const documents = { generic: build(), tenant: build({ id: 'acme', name: 'Acme', modules }) }

const isType = (s: Json, type: string) => s.type === type || (Array.isArray(s.type) && s.type.includes(type))
// Values, not schemas: an example may hold anything. (A property may be *named* `example`.)
const valueKeys = new Set(['example', 'examples', 'enum', 'const', 'default'])

/** Every object of the document with its JSON pointer, examples and enums left out. */
function* objects(v: unknown, at = '#', parentKey = ''): Generator<[string, Json]> {
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) yield* objects(x, `${at}/${i}`, parentKey)
    return
  }
  if (!v || typeof v !== 'object') return
  yield [at, v]
  for (const [k, x] of Object.entries(v))
    if (parentKey === 'properties' || !valueKeys.has(k))
      yield* objects(x, `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, k)
}

/** Each schema reachable from `schema`, `$ref`s followed once. */
function* subschemas(doc: Json, schema: Json, at: string, seen = new Set<string>()): Generator<[string, Json]> {
  if (schema.$ref) {
    if (seen.has(schema.$ref)) return
    seen.add(schema.$ref)
    yield* subschemas(doc, resolveLocal(doc, schema.$ref)!, schema.$ref, seen)
    return
  }
  yield [at, schema]
  for (const k of ['items', 'additionalProperties', 'not'])
    if (schema[k] && typeof schema[k] === 'object') yield* subschemas(doc, schema[k], `${at}/${k}`, seen)
  for (const k of ['allOf', 'anyOf', 'oneOf', 'prefixItems'])
    for (const [i, s] of (schema[k] ?? []).entries()) yield* subschemas(doc, s, `${at}/${k}/${i}`, seen)
  for (const [p, s] of Object.entries(schema.properties ?? {}))
    yield* subschemas(doc, s as Json, `${at}/properties/${p}`, seen)
}

/** Every operation's parameters (path-level ones too) and request body schemas. */
function inputs(doc: Json) {
  const params: Array<[string, Json]> = []
  const bodies: Array<[string, Json]> = []
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [verb, op] of Object.entries(item as Json)) {
      for (const p of (verb === 'parameters' ? op : (op.parameters ?? [])) as Json[]) {
        const param = p.$ref ? resolveLocal(doc, p.$ref)! : p
        params.push([`${path} ${param.in} ${param.name}`, param.schema])
      }
      if (verb === 'parameters') continue
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {}))
        if ((media as Json).schema) bodies.push([`${verb.toUpperCase()} ${path} ${type}`, (media as Json).schema])
    }
  }
  return { params, bodies }
}

t.test('every array schema in the generic and tenant documents says what its items are', async (t) => {
  for (const [name, doc] of Object.entries(documents)) {
    const arrays = [...objects(doc)].filter(([, o]) => isType(o, 'array'))
    t.ok(arrays.length > 20, `${name}: ${arrays.length} array schemas found`)
    const bare = arrays.filter(([, s]) => !('items' in s) && !('prefixItems' in s)).map(([at]) => at)
    t.same(bare, [], `${name}: arrays without items`)
  }
})

t.test('every string parameter has a bound: maxLength, enum or const', async (t) => {
  for (const [name, doc] of Object.entries(documents)) {
    const unbounded = inputs(doc).params.flatMap(([where, schema]) =>
      [...subschemas(doc, schema, where)]
        .filter(([, s]) => isType(s, 'string') && !('maxLength' in s) && !('enum' in s) && !('const' in s))
        .map(([at]) => at)
    )
    t.same(unbounded, [], `${name}: string parameters without a bound`)
  }
})

t.test(
  'every object a request body holds says whether it takes other members, and every array how many items',
  async (t) => {
    for (const [name, doc] of Object.entries(documents)) {
      const found = inputs(doc).bodies.flatMap(([where, schema]) =>
        [...subschemas(doc, schema, where)].flatMap(([at, s]) => [
          ...(isType(s, 'object') && !('additionalProperties' in s) ? [`${at}: no additionalProperties`] : []),
          ...(isType(s, 'array') && !('maxItems' in s) ? [`${at}: no maxItems`] : [])
        ])
      )
      t.same(found, [], name)
    }
  }
)
