/**
 * The fields every record carries besides its payload, in one list: the record's TypeBox
 * schema (plugins/records/records.schema.ts, hence the REST output and OpenAPI), its
 * GraphQL envelope (plugins/records/records.graphql.ts) and the system export columns
 * (core/modules/derive/columns.ts) are each derived from it through a table keyed by
 * `kind`, so a field added here shows up in all three, or in the ones it names.
 */

/** What a system field holds; each output has one row per kind. */
export type SystemFieldKind = 'uuid' | 'string' | 'integer' | 'datetime' | 'actor'

/** How a system field is written as an export column; `state` follows the export's `values` (keys or labels). */
export interface SystemColumn {
  header: string
  width: number
  /** `actorName`: the actor's name; `state`: the state key or label. */
  cell?: 'actorName' | 'state'
}

export interface SystemField {
  key: string
  kind: SystemFieldKind
  /** Absent on some records (REST leaves it out, GraphQL answers null). */
  optional?: true
  description?: string
  /** Where GraphQL says it differently (its mutations take `expectedVersion`, not If-Match). */
  graphqlDescription?: string
  /** Its export column, when it has one: in this list's order, before the payload fields. */
  column?: SystemColumn
}

export const systemFields = [
  { key: 'id', kind: 'uuid' },
  { key: 'moduleKey', kind: 'string' },
  { key: 'moduleVersion', kind: 'string' },
  {
    key: 'number',
    kind: 'string',
    description: 'Human-readable number from the module pattern, e.g. INC-2026-00042',
    column: { header: 'Number', width: 18 }
  },
  {
    key: 'state',
    kind: 'string',
    description: 'Current workflow state',
    column: { header: 'State', width: 16, cell: 'state' }
  },
  {
    key: 'version',
    kind: 'integer',
    description: 'Increments on every change; send it back in If-Match',
    graphqlDescription:
      'Increments on every change; pass it as `expectedVersion` to change the record only if nobody else has'
  },
  { key: 'createdAt', kind: 'datetime', column: { header: 'Created', width: 20 } },
  { key: 'updatedAt', kind: 'datetime', column: { header: 'Updated', width: 20 } },
  { key: 'createdBy', kind: 'actor', column: { header: 'Created by', width: 24, cell: 'actorName' } },
  { key: 'updatedBy', kind: 'actor', column: { header: 'Updated by', width: 24, cell: 'actorName' } },
  {
    key: 'externalRef',
    kind: 'string',
    optional: true,
    description: "The source system's reference, unique among the module's live records; bulk upserts match on it",
    column: { header: 'External ref', width: 24 }
  },
  { key: 'deletedAt', kind: 'datetime', optional: true },
  { key: 'deletedBy', kind: 'actor', optional: true }
] as const satisfies readonly SystemField[]
