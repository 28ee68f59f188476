import { pascal, toDocumentSchema, type DocContext, type JsonSchema } from '../../openapi/builder.ts'
import { lockNote, separationNote } from '../duties.ts'
import type { RegisteredModule } from '../registry.ts'
import { samplePatch, samplePayload, sampleReferences, sampleTransition, type SampleContext } from './sample.ts'

/** `$ref`s to the component schemas one module adds to its tenant's OpenAPI document. */
export interface ModuleRefs {
  key: string
  name: string
  payload: JsonSchema
  payloadPatch: JsonSchema
  state: JsonSchema
  transition: JsonSchema
  record: JsonSchema
  title: string
  /** A payload with the required fields, for examples; valid as sent unless `needs` lists fields. */
  example: Record<string, unknown>
  /** Fields of `example` that hold a placeholder id for a record that must exist first (`incident`). */
  needs: string[]
  /** A merge patch of a record made from `example`, and a transition it can fire at once. */
  patchExample: Record<string, unknown>
  transitionExample?: { transition: string; payload?: Record<string, unknown> }
}

const exampleId = '0b7e6f3a-5c2d-4e1f-8a9b-7c6d5e4f3a2b'

/**
 * The payload schema with no field required and its `additionalProperties` dropped, for a merge
 * patch (`nullable`: `null` removes a key) or a read (hidden fields left out, older records). Only
 * the top level: a nested value (a group's rows, a location) is still replaced whole.
 */
function loosen(schema: JsonSchema, nullable: boolean): JsonSchema {
  const { required: _required, additionalProperties: _additional, properties = {}, ...rest } = schema
  return {
    ...rest,
    properties: Object.fromEntries(
      Object.entries(properties as JsonSchema).map(([p, s]) => [p, nullable ? { anyOf: [s, { type: 'null' }] } : s])
    )
  }
}

/**
 * The merge patch of a payload: the payload loosened, fields a state locks saying so (core/modules/duties.ts), since a
 * change to them can be refused there.
 */
function patchSchemaOf(d: RegisteredModule['definition'], payloadSchema: JsonSchema): JsonSchema {
  const patchSchema = loosen(payloadSchema, true)
  const properties = patchSchema.properties as Record<string, JsonSchema>
  for (const key of Object.keys(properties)) {
    const note = lockNote(d, key)
    if (note) properties[key] = { ...properties[key], description: note }
  }
  const locking = d.workflow.states.filter((s) => s.locks?.length)
  return {
    ...patchSchema,
    type: 'object',
    additionalProperties: false,
    title: `${d.title} payload changes`,
    description:
      'JSON merge patch of the payload: the keys sent replace the stored ones, `null` removes one; the result is validated as a whole. (A key the module no longer defines, kept by a record from an earlier version, can also be removed with `null`.)' +
      (locking.length
        ? ` Locked by state (409 \`field.locked\` when a change touches one): ${locking
            .map((s) => `\`${s.key}\` locks ${s.locks!.join(', ')}`)
            .join('; ')}.`
        : '')
  }
}

/**
 * One module's schemas in the tenant document, all from the module definition the validators
 * use: the payload is `registered.schema` (built by `fieldToSchema`, the one derivation table),
 * so the document types exactly what `POST /api/v1/records` accepts.
 */
export function describeModule(ctx: DocContext, m: RegisteredModule): ModuleRefs {
  // Several fragments (records, bulk, exports, audit log) type the same module: derive it once per document.
  let described = describedIn.get(ctx)
  if (!described) describedIn.set(ctx, (described = new Map()))
  let refs = described.get(m.definition.key)
  if (!refs) described.set(m.definition.key, (refs = derive(ctx, m)))
  return refs
}

const describedIn = new WeakMap<DocContext, Map<string, ModuleRefs>>()

function derive(ctx: DocContext, m: RegisteredModule): ModuleRefs {
  const d = m.definition
  const name = pascal(d.key)
  const payloadSchema = toDocumentSchema(m.schema)
  const payload = ctx.ref(
    {
      ...payloadSchema,
      title: `${d.title} payload`,
      description: `The payload of a ${d.title} record (module \`${d.key}\` ${d.version}), as create validates it.`
    },
    `${name}Payload`
  )
  // Other keys are refused by the whole-payload check, but for `null` on a key kept from an earlier module
  // version. `{ type: 'null' }` would say exactly that, but openapi-typescript then intersects every field with
  // `null`, and a generated client can no longer set one: the description says it instead.
  const payloadPatch = ctx.ref(patchSchemaOf(d, payloadSchema), `${name}PayloadPatch`)
  const payloadOut = ctx.ref(
    {
      ...loosen(payloadSchema, false),
      type: 'object',
      title: `${d.title} payload (read)`,
      description:
        'The stored payload. Fields the caller may not read are left out, and a record stored under an earlier module version may lack newer fields.'
    },
    `${name}PayloadRead`
  )
  const state = ctx.ref(
    {
      type: 'string',
      title: `${d.title} state`,
      enum: d.workflow.states.map((s) => s.key),
      description:
        d.workflow.states
          .map(
            (s) =>
              `\`${s.key}\`${s.label ? ` (${s.label})` : ''}${s.final ? ', final' : ''}${s.requires?.length ? `, requires ${s.requires.join(', ')}` : ''}${s.locks?.length ? `, locks ${s.locks.join(', ')}` : ''}`
          )
          .join('; ') + `. Initial: \`${d.workflow.initial}\`.`
    },
    `${name}State`
  )
  const transition = ctx.ref(
    {
      type: 'string',
      title: `${d.title} transition`,
      // A module without transitions (a register whose records keep their one state) accepts none: an empty
      // enum is not a valid JSON Schema.
      ...(d.workflow.transitions.length
        ? {
            enum: d.workflow.transitions.map((t) => t.key),
            description: d.workflow.transitions
              .map(
                (t) =>
                  `\`${t.key}\`: ${t.from.join(' | ')} → ${t.to}${t.roles?.length ? ` (roles: ${t.roles.join(', ')})` : ''}${separationNote(t) ? `, ${separationNote(t)}` : ''}`
              )
              .join('; ')
          }
        : { not: {}, description: 'This module has no workflow transitions.' })
    },
    `${name}Transition`
  )
  const record = ctx.ref(
    {
      title: `${d.title} record`,
      allOf: [
        { $ref: '#/components/schemas/Record' },
        { type: 'object', properties: { moduleKey: { const: d.key } } },
        {
          // A record its module's migration could not move (`migrationRefused`) may hold what this version does not
          // define; every other record is as this version describes it.
          anyOf: [
            {
              type: 'object',
              properties: {
                state,
                payload: payloadOut,
                availableTransitions: { type: 'array', items: { type: 'object', properties: { key: transition } } }
              }
            },
            { type: 'object', required: ['migrationRefused'] }
          ]
        }
      ]
    },
    `${name}Record`
  )
  // Optional references are left out and a required one holds a placeholder (listed in `needs`), so
  // an example of a module that references nothing is valid as sent on a fresh tenant.
  const sample: SampleContext = { recordIds: {}, userId: exampleId, placeholderId: exampleId }
  const example = samplePayload(d.fields, sample, false)
  const examples = {
    example,
    needs: sampleReferences(d.fields, false),
    patchExample: samplePatch(d.fields, example, sample),
    transitionExample: sampleTransition(d, example, sample)
  }
  return { key: d.key, name, title: d.title, payload, payloadPatch, state, transition, record, ...examples }
}
