import type { Actor } from '../../core/auth/principal.ts'
import { clock } from '../../core/clock.ts'
import { isoUtc as iso, type Queryable } from '../../core/db/index.ts'
import { eventType, insertEvents, type EventType } from '../../core/events/events.ts'
import type { NumberParts } from '../../core/modules/record-number.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldChange } from './records.payload.ts'
import { recordColumns, type RecordRow } from './records.repository.ts'

/**
 * The one write path of records. Every writer (the records service, one record per call;
 * bulk loads, a batch of rows per statement; module migrations and scheduled jobs later)
 * hands its changes here as a batch, and each batch is one statement that numbers the new
 * records, writes them, appends their activity entries and writes their events: a single
 * create is `createRecords` with one op, a bulk batch is the same call with a thousand.
 *
 * What this does not do is decide: rights, field rules, the module schema, merge patches,
 * transitions and references are records.rules.ts and records.checks.ts, and a caller runs
 * them first (a migration or job acts as a named system principal through the same rules).
 * Tenant and actor are explicit on every call (`Writer`), never read from a request. Each
 * statement is set-based: the batch travels as one JSON parameter, unpacked by
 * `jsonb_to_recordset`, so a batch costs one round trip whatever its size. The caller
 * chooses the transaction: pass a pool for a statement of its own, or the client of a
 * transaction that also stores an idempotent answer or locks what it changes.
 * docs/record-writes.md describes this API for module authors.
 */

/** Who writes: the tenant whose records change and the actor the activity, `updated_by` and events name. */
export interface Writer {
  tenantId: string
  actor: Actor
}

/** What a write needs of the module: its key, version, initial state and number pattern (a RegisteredModule). */
export type WriteModule = Pick<RegisteredModule, 'definition' | 'numberPattern'>

/** A new record, checked by createRules (which returns its `changes`, the created entry's diff). */
export interface NewRecordOp {
  payload: Record<string, unknown>
  changes: readonly FieldChange[]
  externalRef?: string | null
}

/** A change of a live record the caller holds locked: a payload update, a transition (with the fields set on the way) or a soft delete. */
export interface RecordChangeOp {
  id: string
  /** The whole payload after the change (updateRules / transitionRules give it; a delete keeps the current one). */
  payload: Record<string, unknown>
  state: string
  action: 'updated' | 'transitioned' | 'deleted' | 'migrated'
  changes: readonly FieldChange[]
  transition?: { key: string; from: string; to: string }
  comment?: string
  /** A migration's move (action `migrated`): the versions, for its event. */
  migration?: { from: string; to: string }
  /** The module version the record stays under, when not the loaded one (a refused record deleted as it is stored). */
  moduleVersion?: string
}

export interface CreateOptions {
  /** Numbers taken beforehand with reserveNumbers, one per op in order; without them the statement takes them from the counter itself. */
  numbers?: readonly string[]
  /** The moment the number pattern is rendered for ({YYYY} and friends); now by default. */
  at?: Date
}

/** A new record's keys, in the order of the ops. */
export interface CreatedKey {
  id: string
  number: string
}

// ---- Numbering: the counter scope, the counter upsert and the padding, here and nowhere else.

/** The counter a number pattern draws from: the text around {seq} as rendered, so a pattern with {YYYY} restarts each year. */
const counterScope = (parts: NumberParts) => `${parts.prefix}{seq}${parts.suffix}`

/** Takes `count` values of a module's counter (created at 0); returns the last as `last`. Inside a transaction the counter row stays locked until it ends. */
const counterUpsert = (p: { tenant: string; module: string; scope: string; count: string }) =>
  `INSERT INTO record_sequences (tenant_id, module_key, scope, value) VALUES (${p.tenant}, ${p.module}, ${p.scope}, ${p.count})
   ON CONFLICT (tenant_id, module_key, scope) DO UPDATE SET value = record_sequences.value + ${p.count}
   RETURNING value AS last`

/** The number of counter value `value` (a bigint expression): prefix, the value padded to the width, suffix. */
const numberText = (value: string, p: { prefix: string; width: string; suffix: string }) =>
  `${p.prefix} || CASE WHEN length((${value})::text) >= ${p.width} THEN (${value})::text ELSE lpad((${value})::text, ${p.width}, '0') END || ${p.suffix}`

/**
 * Takes `count` numbers of the module's counter in a statement of its own and returns them
 * in order. Bulk numbers a create-only batch this way before its transaction: committed at
 * once, so batches number in input order yet write in parallel (a batch that then fails
 * leaves a gap, as any rolled-back create does).
 */
export async function reserveNumbers(
  db: Queryable,
  w: Pick<Writer, 'tenantId'>,
  m: WriteModule,
  count: number,
  at = clock().now()
): Promise<string[]> {
  const parts = m.numberPattern.render(at)
  const { rows } = await db.query({
    name: 'records-write-reserve-numbers',
    text: `WITH seq AS (${counterUpsert({ tenant: '$1', module: '$2', scope: '$3', count: '$4' })})
      SELECT ${numberText('seq.last - $4 + g', { prefix: '$5', width: '$6', suffix: '$7' })} AS number
      FROM seq, generate_series(1, $4::bigint) AS g ORDER BY g`,
    values: [w.tenantId, m.definition.key, counterScope(parts), count, parts.prefix, parts.width, parts.suffix]
  })
  return rows.map((r) => r.number)
}

// ---- Creates.

/** The record.created event of each row of the CTE `r` of inserted records. */
const createdEvent = (actor: string) => ({
  tenantId: 'r.tenant_id',
  type: eventType('record.created'),
  actor,
  moduleKey: 'r.module_key',
  subjectId: 'r.id',
  data: "jsonb_build_object('number', r.number, 'version', r.version)"
})

/**
 * The create statement: `input` unpacks the batch ($5) with each row's position and a new
 * id, numbered from the counter in the same statement unless the numbers are given (then
 * the counter row is locked for this statement only when it runs on its own); `r` inserts
 * the records in input order (so `seq` follows it), `a` their created entries, `e` their
 * events. `full`: the answer is each record with its activity, as the service presents it.
 */
function createStatement(numbered: boolean, full: boolean) {
  const columns = numbered
    ? 'payload jsonb, changes jsonb, external_ref text, number text'
    : 'payload jsonb, changes jsonb, external_ref text'
  const names = numbered ? 'payload, changes, external_ref, number, ord' : 'payload, changes, external_ref, ord'
  const number = numbered
    ? 't.number'
    : numberText('seq.last - $8 + t.ord', { prefix: '$9', width: '$10', suffix: '$11' })
  return `WITH ${numbered ? '' : `seq AS (${counterUpsert({ tenant: '$1', module: '$2', scope: '$7', count: '$8' })}),`}
    input AS MATERIALIZED (
      SELECT gen_random_uuid() AS id, t.ord, t.payload, t.changes, t.external_ref, ${number} AS number
      FROM ROWS FROM (jsonb_to_recordset($5::jsonb) AS (${columns})) WITH ORDINALITY AS t(${names})${numbered ? '' : ', seq'}),
    r AS (
      INSERT INTO records (tenant_id, id, module_key, module_version, number, state, payload, created_by, updated_by, external_ref)
      SELECT $1, input.id, $2, $3, input.number, $4, input.payload, $6, $6, input.external_ref FROM input ORDER BY input.ord
      RETURNING ${full ? '*' : 'tenant_id, id, module_key, number, version'}),
    a AS (
      INSERT INTO record_activity (tenant_id, record_id, actor, action, changes)
      SELECT $1, input.id, $6, 'created', input.changes FROM input ORDER BY input.ord
      ${full ? 'RETURNING record_id, at, actor, action, changes, transition, comment' : ''}),
    e AS (${insertEvents(createdEvent('$6'), 'r')})
    ${
      full
        ? `SELECT ${recordColumns},
             json_build_array(json_build_object('id', 1, 'at', ${iso('a.at')}, 'actor', a.actor, 'action', a.action,
               'changes', a.changes, 'transition', a.transition, 'comment', a.comment)) AS activity
           FROM r JOIN a ON a.record_id = r.id JOIN input ON input.id = r.id ORDER BY input.ord`
        : 'SELECT id, number FROM input ORDER BY ord'
    }`
}

const createStatements = {
  keys: createStatement(false, false),
  keysNumbered: createStatement(true, false),
  records: createStatement(false, true),
  recordsNumbered: createStatement(true, true)
}

function createValues(w: Writer, m: WriteModule, ops: readonly NewRecordOp[], o: CreateOptions) {
  if (o.numbers && o.numbers.length !== ops.length) throw new Error('createRecords: one reserved number per op')
  const rows = JSON.stringify(
    ops.map((op, i) => ({
      payload: op.payload,
      changes: op.changes,
      external_ref: op.externalRef ?? null,
      ...(o.numbers ? { number: o.numbers[i] } : {})
    }))
  )
  const values: unknown[] = [
    w.tenantId,
    m.definition.key,
    m.definition.version,
    m.definition.workflow.initial,
    rows,
    w.actor
  ]
  if (!o.numbers) {
    const parts = m.numberPattern.render(o.at ?? clock().now())
    values.push(counterScope(parts), ops.length, parts.prefix, parts.width, parts.suffix)
  }
  return values
}

/**
 * Creates a batch of records of one module in one statement: numbers (from the counter, or
 * `o.numbers`), the records in the module's initial state, their `created` activity entries
 * and their record.created events. Returns each one's id and number, in the order of `ops`.
 */
export async function createRecords(
  db: Queryable,
  w: Writer,
  m: WriteModule,
  ops: readonly NewRecordOp[],
  o: CreateOptions = {}
): Promise<CreatedKey[]> {
  if (!ops.length) return []
  const { rows } = await db.query({
    name: o.numbers ? 'records-write-create-numbered' : 'records-write-create',
    text: o.numbers ? createStatements.keysNumbered : createStatements.keys,
    values: createValues(w, m, ops, o)
  })
  return rows
}

/** As createRecords, answering with each new record and its activity (the row the records service presents). */
export async function createRecordRows(
  db: Queryable,
  w: Writer,
  m: WriteModule,
  ops: readonly NewRecordOp[],
  o: CreateOptions = {}
): Promise<RecordRow[]> {
  if (!ops.length) return []
  const { rows } = await db.query({
    name: o.numbers ? 'records-write-create-rows-numbered' : 'records-write-create-rows',
    text: o.numbers ? createStatements.recordsNumbered : createStatements.records,
    values: createValues(w, m, ops, o)
  })
  return rows
}

// ---- Changes.

const changeStatement = `WITH input AS (
    SELECT t.* FROM ROWS FROM (jsonb_to_recordset($2::jsonb) AS (id uuid, payload jsonb, state text, action text,
      changes jsonb, transition jsonb, comment text, type text, data jsonb, module_version text))
      WITH ORDINALITY AS t(id, payload, state, action, changes, transition, comment, type, data, module_version, ord)),
  r AS (
    UPDATE records SET payload = input.payload, state = input.state, version = records.version + 1, updated_at = now(),
      updated_by = $3, module_version = coalesce(input.module_version, $4),
      deleted_at = CASE WHEN input.action = 'deleted' THEN now() ELSE records.deleted_at END,
      deleted_by = CASE WHEN input.action = 'deleted' THEN $3 ELSE records.deleted_by END
    FROM input WHERE records.tenant_id = $1 AND records.id = input.id
    RETURNING records.tenant_id, records.id, records.module_key, records.number, records.version, input.ord,
      input.action, input.changes, input.transition, input.comment, input.type, input.data),
  a AS (
    INSERT INTO record_activity (tenant_id, record_id, actor, action, changes, transition, comment)
    SELECT r.tenant_id, r.id, $3, r.action, r.changes, r.transition, r.comment FROM r ORDER BY r.ord),
  e AS (${insertEvents(
    {
      tenantId: 'r.tenant_id',
      type: 'r.type',
      actor: '$3',
      moduleKey: 'r.module_key',
      subjectId: 'r.id',
      data: "jsonb_build_object('number', r.number, 'version', r.version) || r.data"
    },
    'r',
    'r.ord'
  )})
  SELECT id, version FROM r ORDER BY ord`

/**
 * Applies a batch of changes to records the caller has locked (SELECT … FOR UPDATE in its
 * transaction) in one statement: payload, state, version + 1, `updated_*` (and `deleted_*`
 * for a delete), the module's version (a changed record is stored under the loaded version:
 * its payload passed that version's rules), one activity entry each and its record.<action>
 * event. Ids are distinct within a batch. Returns each changed record's id and new version,
 * in the order of `ops`.
 */
export async function changeRecords(
  db: Queryable,
  w: Writer,
  m: Pick<WriteModule, 'definition'>,
  ops: readonly RecordChangeOp[]
): Promise<Array<{ id: string; version: number }>> {
  if (!ops.length) return []
  const rows = JSON.stringify(
    ops.map((op) => {
      const type: EventType = `record.${op.action}`
      const data: Record<string, unknown> = {}
      if (op.action !== 'deleted') data.changedFields = op.changes.map((x) => x.field)
      if (op.transition) data.transition = op.transition
      if (op.migration) data.migration = op.migration
      return {
        id: op.id,
        payload: op.payload,
        state: op.state,
        action: op.action,
        changes: op.changes,
        transition: op.transition ?? null,
        comment: op.comment ?? null,
        type,
        data,
        module_version: op.moduleVersion ?? null
      }
    })
  )
  const { rows: changed } = await db.query({
    name: 'records-write-change',
    text: changeStatement,
    values: [w.tenantId, rows, w.actor, m.definition.version]
  })
  return changed
}
