import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import type pg from 'pg'
import { rowRule } from '../../core/auth/access.ts'
import { currentBudget } from '../../core/limits/budget.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { Metrics } from '../../core/telemetry/metrics.ts'
import { ApiError, problemFields, problems } from '../../core/errors/index.ts'
import type { Lease } from '../../core/limits/limiter.ts'
import { logger } from '../../core/logger.ts'
import { span } from '../../core/telemetry/tracing.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { jsonDataProblems, textProblem } from '../../core/json-data.ts'
import { jsonTextProblem } from '../../core/json-text.ts'
import { validationError, validationProblems } from '../../core/validation.ts'
import { renewKey } from '../idempotency/idempotency.shared.ts'
import {
  canonicalExternalRef,
  changeRecords,
  createRecords,
  createRules,
  isExternalRefClash,
  moveLocked,
  referenceProblems,
  reserveNumbers,
  patchRules,
  type FieldChange,
  type RecordChangeOp,
  type RecordRow,
  type Writer
} from '../records/records.shared.ts'
import { endBulkKey, lineHash, type BulkKey } from './bulk.idempotency.ts'
import { holdsSeveralObjects, newlinesMissingDetail, type RawLine } from './bulk.lines.ts'
import * as repo from './bulk.repository.ts'
import { bulkLineValidator, type BulkOutcomeLine, type BulkRowProblem, type Outcome } from './bulk.schema.ts'
import { BulkTally, outcomeLabel } from './bulk.summary.ts'
import { transaction } from '../../core/db/index.ts'

/** How long a bulk call holds its concurrency slot without finishing a batch (a crashed instance's slot frees itself). */
export const leaseMs = 5 * 60_000

export interface BulkOptions {
  pool: pg.Pool
  tenants: TenantDirectory
  maxRows: number
  maxLineBytes: number
  batchSize: number
  /** A batch is written at the latest this long after its first row arrived. */
  flushAfterMs: number
  inFlightTimeoutSeconds: number
  /** Rows counted by outcome (`records_bulk_rows_total`). */
  metrics?: Pick<Metrics, 'bulkRows'>
  /** Aborted when the instance drains (core/shutdown.ts): the call takes no more rows, answers for those it took and says where to resume. */
  shutdown?: AbortSignal
}

/** Units of the request budget one bulk row costs: parsing, checking and writing a row is a few lookups' worth. */
const rowUnits = 4

/** One input row on its way: parsed and checked, or already failed. */
interface Row {
  line: number
  hash?: Buffer
  externalRef?: string
  payload?: Record<string, unknown>
  /** The row checked as a new record while earlier batches are in the database: its problem, or its created entry's diff. */
  /** The row as a create: its problem, or the payload to store (defaults and computed fields in) and its diff. */
  asNew?: { problem: BulkRowProblem } | { payload: Record<string, unknown>; changes: FieldChange[] }
  outcome?: Outcome
}

/** A row that passed the checks of a create: the payload to store and its diff. */
const asCreate = (row: Row) => row.asNew as { payload: Record<string, unknown>; changes: FieldChange[] }

/** The iterator's next line, or undefined if `signal` aborts first (an upload that stalls does not hold up a drain). */
async function nextUnlessAborted<T>(
  it: AsyncIterator<T>,
  signal: AbortSignal | undefined
): Promise<IteratorResult<T> | undefined> {
  if (!signal) return it.next()
  if (signal.aborted) return undefined
  let onAbort!: () => void
  const aborted = new Promise<undefined>((resolve) =>
    signal.addEventListener('abort', (onAbort = () => resolve(undefined)), { once: true })
  )
  // Left behind when the drain wins: its failure (the upload cut) must not go unhandled.
  const pending = it.next()
  pending.catch(() => undefined)
  try {
    return await Promise.race([pending, aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** A per-row problem: the public part of an ApiError (status, code, detail and its extras). */
function rowProblem(err: unknown): BulkRowProblem {
  // problemFields types its answer loosely; it always holds the status, code and detail of the error.
  if (err instanceof ApiError) return problemFields(err) as BulkRowProblem
  throw err
}

const errorOutcome = (row: Pick<Row, 'line' | 'externalRef'>, problem: BulkRowProblem): Outcome => ({
  line: row.line,
  ...(row.externalRef !== undefined ? { externalRef: row.externalRef } : {}),
  status: 'error',
  problem
})

/**
 * One bulk call: reads NDJSON rows as they arrive, writes them in batches (one
 * transaction each, numbering, activity and stored outcomes included) and streams one
 * outcome per row, in input order, once its batch has committed: an outcome a client
 * has seen is durable, and a cut-off call leaves only whole batches behind.
 */
export class BulkRun {
  readonly out = new PassThrough()
  private batch: Row[] = []
  private timer?: NodeJS.Timeout
  private chain: Promise<void> = Promise.resolve()
  /** Stage one (stored outcomes, numbers), in input order. */
  private prepared: Promise<unknown> = Promise.resolve()
  /** Every transaction handed on so far, settled. */
  private written: Promise<unknown> = Promise.resolve()
  private waiters: Array<() => void> = []
  /** The line of the first row past the row limit: where the next call resumes. */
  private firstRefusedLine?: number
  private pending = 0
  private stopped = false
  /** The instance began draining: reading stopped at a row boundary. */
  private drained = false
  private failure?: unknown
  private readonly tally: BulkTally
  /** The budget of the request this call runs for. */
  private readonly budget = currentBudget()
  /** Who the records are written by, for the write path (records.write.ts). */
  private readonly writer: Writer

  constructor(
    private readonly o: BulkOptions,
    private readonly principal: Principal,
    private readonly module: RegisteredModule,
    private readonly dryRun: boolean,
    private readonly key: BulkKey | undefined,
    private readonly lease: Lease | undefined,
    /** The number of the body's first line in the client's file (`?firstLine=`): outcomes, stored outcomes and replays use the file's numbers. */
    private readonly firstLine = 1
  ) {
    this.tally = new BulkTally(firstLine)
    this.writer = { tenantId: principal.tenantId, actor: principal.actor }
    // Koa destroys the response body when the client goes away: stop reading then.
    this.out.on('close', () => (this.stopped = true))
  }

  /** Runs the call to its end; never throws (a failure becomes the last line). `lines` come a chunk's worth at a time (splitLines). */
  async run(lines: AsyncIterable<RawLine[]>) {
    let complete = false
    const input = lines[Symbol.asyncIterator]()
    try {
      reading: for (;;) {
        const next = await nextUnlessAborted(input, this.o.shutdown)
        if (!next) {
          this.drained = true
          void input.return?.()
          break
        }
        if (next.done) break
        for (const raw of next.value) {
          // A row boundary: once the instance drains, no further row is taken (the rows taken are still written below).
          if (this.o.shutdown?.aborted) {
            this.drained = true
            void input.return?.()
            break reading
          }
          if (this.stopped || this.failure) {
            void input.return?.()
            break reading
          }
          const row = this.parse(raw)
          if (!row) continue
          this.batch.push(row)
          if (this.batch.length === 1) this.timer = setTimeout(() => void this.flush(), this.o.flushAfterMs)
          if (this.batch.length >= this.o.batchSize) void this.flush()
          // Rows are checked while earlier batches are in the database; never more than three batches on their way.
          if (this.pending >= 4) await this.below(4)
        }
      }
      complete = !this.stopped && !this.failure && !this.drained
      await this.flush()
    } catch (err) {
      // The upload broke off (client gone) or the body could not be read.
      if (!this.stopped) logger.warn('bulk input ended early', { error: (err as Error).message })
    } finally {
      clearTimeout(this.timer)
      await this.chain
    }
    complete &&= !this.failure && !this.stopped
    const summary = { summary: this.tally.summary(this.dryRun, complete) }
    complete = summary.summary.complete
    if (this.failure) {
      const problem =
        this.failure instanceof ApiError
          ? rowProblem(this.failure)
          : {
              status: 500,
              code: 'internal.error',
              detail:
                'The service failed while loading: rows reported created or updated above are stored; the rest, and lines without an outcome, were not loaded. Retry with the same Idempotency-Key to continue.'
            }
      await this.emit([{ problem }])
    } else if (this.drained) {
      const resume = summary.summary.resumeAtLine ?? this.firstLine
      const detail = `This instance is shutting down and took no rows past line ${resume - 1}: every row it took has its outcome above. Send the lines from ${resume} on again (with ?firstLine=${resume}, or the whole body with the same Idempotency-Key); another instance answers.`
      await this.emit([{ problem: rowProblem(problems.unavailable('service.shutting_down', detail)) }])
    }
    await this.emit([summary])
    if (this.key)
      await endBulkKey(this.o.pool, this.key, complete ? summary : undefined).catch((err) =>
        logger.warn('could not end bulk key', { error: err.message })
      )
    await this.lease?.release().catch(() => undefined)
    // The rows count against the rate limit once the call is over (the HTTP layer settled before the stream ended).
    await this.budget.settleRate().catch(() => undefined)
    this.out.end()
  }

  private parse(raw: RawLine): Row | undefined {
    if (raw.bytes && raw.bytes.length === 0) return undefined
    if (raw.bytes && raw.bytes.every((b) => b === 0x20 || b === 0x09)) return undefined
    const line = this.firstLine - 1 + raw.number
    const rowNumber = this.tally.row()
    const hash = this.key && raw.bytes ? lineHash(raw.bytes) : undefined
    if (rowNumber > this.o.maxRows) {
      this.firstRefusedLine ??= line
      const resume = this.firstRefusedLine
      return {
        line,
        outcome: errorOutcome(
          { line },
          {
            status: 413,
            code: 'bulk.row_limit',
            detail: `A bulk call takes at most ${this.o.maxRows} rows; this is row ${rowNumber}. It was not attempted: send the lines from ${resume} on in another call, with ?firstLine=${resume} to keep these line numbers.`
          }
        )
      }
    }
    // Each row is work of the call's budget (core/limits/budget.ts), which also counts the call against the rate limit by its rows.
    if (!this.budget.fits(rowUnits)) {
      this.firstRefusedLine ??= line
      const resume = this.firstRefusedLine
      return {
        line,
        outcome: errorOutcome(
          { line },
          {
            status: 422,
            code: 'request.too_costly',
            detail: `This call has done the work one request may (${this.budget.limit} units, ${rowUnits} a row). Row ${rowNumber} was not attempted: send the lines from ${resume} on in another call, with ?firstLine=${resume} to keep these line numbers.`
          }
        )
      }
    }
    this.budget.charge(rowUnits, 'bulk rows')
    if (raw.tooLong) {
      if (holdsSeveralObjects(raw.head!)) return { line, outcome: errorOutcome({ line }, newlinesMissing()) }
      return {
        line,
        outcome: errorOutcome(
          { line },
          { status: 413, code: 'row.too_large', detail: `The line is longer than ${this.o.maxLineBytes} bytes.` }
        )
      }
    }
    const text = raw.bytes!.toString('utf8')
    // Several objects on one line are never JSON: looked for only once the line is refused, so good rows pay nothing.
    const shape = jsonTextProblem(text)
    if (shape)
      return {
        line,
        hash,
        outcome: errorOutcome(
          { line },
          holdsSeveralObjects(raw.bytes!) ? newlinesMissing() : rowProblem(validationError([shape]))
        )
      }
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (err) {
      if (holdsSeveralObjects(raw.bytes!)) return { line, hash, outcome: errorOutcome({ line }, newlinesMissing()) }
      return {
        line,
        hash,
        outcome: errorOutcome(
          { line },
          { status: 400, code: 'row.malformed_json', detail: `The line is not valid JSON: ${(err as Error).message}` }
        )
      }
    }
    const given = (value as { externalRef?: unknown })?.externalRef
    // The outcome echoes the reference only when it is text that can be echoed.
    const ref = typeof given === 'string' && !textProblem(given) ? given : undefined
    // What no row may hold (NUL, lone surrogates, 1e400, reserved keys, deep nesting) fails that row alone, here, before the database could refuse its batch.
    const refused = jsonDataProblems(value)
    const found = refused.length ? { list: refused, more: false } : validationProblems(bulkLineValidator, value)
    if (found)
      return {
        line,
        hash,
        externalRef: ref,
        outcome: errorOutcome({ line, externalRef: ref }, rowProblem(validationError(found.list, found.more)))
      }
    const v = value as { payload: Record<string, unknown>; externalRef?: string }
    let externalRef: string | undefined
    try {
      externalRef = v.externalRef === undefined ? undefined : canonicalExternalRef(v.externalRef)
    } catch (err) {
      return { line, hash, externalRef: ref, outcome: errorOutcome({ line, externalRef: ref }, rowProblem(err)) }
    }
    return { line, hash, externalRef, payload: v.payload, asNew: this.checkAsNew(v.payload) }
  }

  /** Everything a create needs that does not depend on the database: rights, field rules, schema, the activity diff. */
  private checkAsNew(payload: Record<string, unknown>): Row['asNew'] {
    try {
      return createRules(this.principal, this.module, payload)
    } catch (err) {
      return { problem: rowProblem(err) }
    }
  }

  /**
   * Hands the current batch on. Three stages: in input order, stored outcomes are looked
   * up and (for batches that only create) references checked and numbers reserved; then
   * the transaction, where create-only batches may overlap the next one (a second
   * database backend); then, in input order again, the outcomes are sent. Batches with
   * upserts or a dry run wait for every earlier write and run whole in one transaction.
   */
  private flush(): Promise<void> {
    clearTimeout(this.timer)
    const rows = this.batch
    if (!rows.length) return this.chain
    this.batch = []
    this.pending++
    const createsOnly = !this.dryRun && rows.every((r) => r.outcome || r.externalRef === undefined)
    const earlierWrites = this.written
    const ready = this.prepared.then(async () => {
      if (this.failure) return undefined
      await this.replay(rows)
      if (!createsOnly) {
        await earlierWrites
        return undefined
      }
      return this.numberCreates(rows)
    })
    this.prepared = ready.catch(() => undefined)
    const written = ready.then((numbered) =>
      this.failure
        ? undefined
        : span(
            'bulk.batch',
            { 'bulk.rows': rows.length, 'bulk.creates_only': createsOnly, 'bulk.dry_run': this.dryRun },
            () => (numbered ? this.writeCreates(rows, numbered) : this.write(rows))
          )
    )
    this.written = Promise.all([earlierWrites, written.catch(() => undefined)])
    this.chain = this.chain.then(async () => {
      try {
        // A batch already under way when an earlier one failed still reports what it committed.
        const outcomes = await written
        if (outcomes) await this.emit(outcomes)
      } catch (err) {
        this.failure ??= err
        logger.error('bulk batch failed', { error: (err as Error)?.stack ?? String(err) })
        await this.emit(rows.map((r) => this.count(this.failedRow(r))))
      } finally {
        this.pending--
        for (const wake of this.waiters.splice(0)) wake()
      }
    })
    return this.chain
  }

  /** The outcome of a row whose batch failed in the database: its own earlier verdict if it had one (a replay, a row error), else not loaded. */
  private failedRow(r: Row): Outcome {
    if (
      r.outcome &&
      ((r.outcome as { replayed?: true }).replayed ||
        (r.outcome.status === 'error' && r.outcome.problem.code !== 'bulk.not_loaded'))
    )
      return r.outcome
    return errorOutcome(r, notLoaded('The batch holding this row failed in the database and was rolled back.'))
  }

  /** Resolves once fewer than `n` batches are on their way. */
  private async below(n: number) {
    while (this.pending >= n) await new Promise<void>((resolve) => this.waiters.push(resolve))
  }

  private async emit(lines: BulkOutcomeLine[]) {
    if (this.out.destroyed) return
    const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
    if (!this.out.write(text)) await Promise.race([once(this.out, 'drain'), once(this.out, 'close')])
  }

  /** Outcomes of this batch that belong in the store for its Idempotency-Key (not replays, not refused changed lines). */
  private toStore(rows: Row[]) {
    return rows
      .filter(
        (r) =>
          r.hash &&
          !(r.outcome as { replayed?: true }).replayed &&
          !(r.outcome?.status === 'error' && r.outcome.problem.code === 'idempotency.line_changed')
      )
      .map((r) => ({ line: r.line, lineHash: r.hash!, outcome: r.outcome }))
  }

  /** Checks, writes and returns the outcomes of one batch, in input order, all in one transaction. */
  private async write(rows: Row[]): Promise<Outcome[]> {
    await this.rowByRowOnRefusal(rows, (isolate) =>
      transaction(
        this.o.pool,
        async (client) => {
          const refs = rows.filter((r) => !r.outcome && r.externalRef !== undefined)
          // Rows are applied in order; a reference repeated within the batch waits for its first row.
          for (const segment of segments(rows.filter((r) => !r.outcome)))
            await this.apply(client, segment, refs.length > 0, isolate)
          if (!this.dryRun) await this.storeBatch(client, rows)
        },
        { rollback: this.dryRun }
      )
    )
    await this.lease?.extend(leaseMs).catch(() => undefined)
    return rows.map((r) => this.count(r.outcome!))
  }

  private async storeBatch(client: pg.PoolClient, rows: Row[]) {
    if (!this.key) return
    await repo.storeOutcomes(client, this.key, this.toStore(rows))
    await renewKey(client, this.key, this.o.inFlightTimeoutSeconds)
  }

  /**
   * Runs a batch's transaction; if the database refuses a row's data, runs it again with
   * each row on its own savepoint (`isolate`), so that row alone fails and the good rows
   * of its batch are written. The edge checks (core/json-data.ts) catch every refusal
   * known; this is for the next one.
   */
  private async rowByRowOnRefusal(rows: Row[], run: (isolate: boolean) => Promise<void>) {
    const before = rows.map((r) => r.outcome)
    try {
      await run(false)
    } catch (err) {
      if (!refusesRow(err)) throw err
      logger.warn('the database refused a bulk row; its batch is written row by row', {
        sqlState: (err as { code?: string }).code,
        error: (err as Error).message
      })
      rows.forEach((r, i) => (r.outcome = before[i]))
      await run(true)
    }
  }

  /** Runs one row's statements on a savepoint: a refusal becomes that row's outcome and the transaction goes on. */
  private async isolated(client: pg.PoolClient, row: Row, fn: () => Promise<void>) {
    await client.query('SAVEPOINT bulk_row')
    try {
      await fn()
      await client.query('RELEASE SAVEPOINT bulk_row')
    } catch (err) {
      await client.query('ROLLBACK TO SAVEPOINT bulk_row')
      if (!refusesRow(err)) throw err
      row.outcome = errorOutcome(row, refusedProblem(err, this.module.definition.key, row.externalRef))
    }
  }

  /**
   * A create-only batch before its transaction, in input order: rows that fail their
   * checks or references get their outcome, the others their numbers (reserved and
   * committed at once, so batches number in input order yet write in parallel; a batch
   * that then fails in the database leaves a gap).
   */
  private async numberCreates(rows: Row[]): Promise<Array<{ row: Row; number: string }>> {
    const { principal, module } = this
    const candidates: Row[] = []
    for (const row of rows) {
      if (row.outcome) continue
      if ('problem' in row.asNew!) row.outcome = errorOutcome(row, row.asNew.problem)
      else candidates.push(row)
    }
    const refProblems = await referenceProblems(
      this.o.pool,
      this.o.tenants,
      principal.tenantId,
      module,
      candidates.map((r) => ({ payload: asCreate(r).payload }))
    )
    const ok = candidates.filter((row, i) => {
      if (!refProblems[i].length) return true
      row.outcome = errorOutcome(row, rowProblem(validationError(refProblems[i])))
      return false
    })
    if (!ok.length) return []
    const numbers = await reserveNumbers(this.o.pool, this.writer, module, ok.length)
    return ok.map((row, i) => ({ row, number: numbers[i] }))
  }

  private async writeCreates(rows: Row[], numbered: Array<{ row: Row; number: string }>): Promise<Outcome[]> {
    await this.rowByRowOnRefusal(rows, (isolate) =>
      transaction(this.o.pool, async (client) => {
        if (isolate)
          for (const one of numbered)
            await this.isolated(client, one.row, () => this.insert(client, [one.row], [one.number]))
        else if (numbered.length)
          await this.insert(
            client,
            numbered.map((n) => n.row),
            numbered.map((n) => n.number)
          )
        await this.storeBatch(client, rows)
      })
    )
    await this.lease?.extend(leaseMs).catch(() => undefined)
    return rows.map((r) => this.count(r.outcome!))
  }

  /**
   * Creates records through the one write path (records.write.ts) and sets their outcomes:
   * with the numbers reserved for a create-only batch, or numbered by the statement itself.
   */
  private async insert(client: pg.PoolClient, rows: Row[], numbers?: string[]) {
    const ops = rows.map((row) => ({
      ...asCreate(row),
      externalRef: row.externalRef ?? null
    }))
    const created = await createRecords(client, this.writer, this.module, ops, { numbers })
    rows.forEach((row, i) => (row.outcome = this.done(row, 'created', created[i].id, created[i].number, 1)))
  }

  private count(o: Outcome): Outcome {
    this.o.metrics?.bulkRows.inc({ outcome: outcomeLabel(o) })
    return this.tally.count(o)
  }

  /** Rows sent before under this key and number are answered from the store, not written again. */
  private async replay(rows: Row[]) {
    if (!this.key || this.dryRun) return
    const stored = await repo.storedOutcomes(
      this.o.pool,
      this.key,
      rows.map((r) => r.line)
    )
    for (const r of rows) {
      const s = stored.get(r.line)
      if (!s) continue
      if (r.hash && s.hash.equals(r.hash)) r.outcome = { ...s.outcome, replayed: true }
      else
        r.outcome = errorOutcome(r, {
          status: 422,
          code: 'idempotency.line_changed',
          detail: `Line ${r.line} differs from the line ${r.line} first sent with this Idempotency-Key; it was not loaded. Use a new key for new data.`
        })
    }
  }

  /** Writes rows whose external references are distinct: updates of matched records, one insert for the rest. */
  private async apply(client: pg.PoolClient, rows: Row[], upserts: boolean, isolate: boolean) {
    const { principal, module } = this
    const key = module.definition.key
    const existing = new Map<string, RecordRow>()
    let refused: ReadonlyMap<string, unknown> = new Map()
    if (upserts) {
      await repo.lockExternalRefs(client, principal.tenantId, key)
      const refs = rows.filter((r) => r.externalRef !== undefined).map((r) => r.externalRef!)
      // Records not yet under the loaded version of the module move first, as a single write's do (records.migrate.ts).
      if (refs.length) {
        const moved = await moveLocked(
          client,
          principal.tenantId,
          module,
          await repo.lockByExternalRefs(client, principal.tenantId, key, refs)
        )
        for (const rec of moved.rows) existing.set(rec.external_ref!, rec)
        refused = moved.refused
      }
    }
    const rule = rowRule(principal, module)
    const plans: Plan[] = []
    for (const row of rows) {
      const current = row.externalRef !== undefined ? existing.get(row.externalRef) : undefined
      try {
        if (!current) {
          if ('problem' in row.asNew!) row.outcome = errorOutcome(row, row.asNew.problem)
          else plans.push({ row, payload: row.asNew!.payload })
          continue
        }
        // A record its module's migration could not move is corrected by a single PATCH, not by a bulk row.
        if (refused.has(current.id))
          throw problems.conflict(
            'record.migration_refused',
            `The ${key} record with externalRef "${row.externalRef}" is stored under an older version of the module, which version ${module.definition.version} refuses as its migration leaves it: correct it with PATCH /api/v1/records/${current.id} first.`
          )
        if (rule?.test(current) === false) {
          throw problems.conflict(
            'record.external_ref_taken',
            `A live ${key} record has externalRef "${row.externalRef}", and this credential may not change it.`
          )
        }
        const { payload, changes } = patchRules(principal, module, current, row.payload!)
        plans.push({ row, payload, current, changes })
      } catch (err) {
        row.outcome = errorOutcome(row, err instanceof Error ? rowProblem(err) : (err as BulkRowProblem))
      }
    }
    const refProblems = await referenceProblems(
      client,
      this.o.tenants,
      principal.tenantId,
      module,
      plans.map((p) => ({ payload: p.payload, changed: p.changes && new Set(p.changes.map((c) => c.field)) }))
    )
    const ok = plans.filter((p, i) => {
      if (!refProblems[i].length) return true
      p.row.outcome = errorOutcome(p.row, rowProblem(validationError(refProblems[i])))
      return false
    })

    // Updates of matched records: one statement for the segment, or each on its own savepoint.
    const updates = ok.filter((p) => p.current)
    const changing = updates.filter((p) => p.changes!.length)
    const changeOf = (p: Plan): RecordChangeOp => ({
      id: p.current!.id,
      payload: p.payload,
      state: p.current!.state,
      action: 'updated',
      changes: p.changes!
    })
    const updated = (p: Plan) => {
      const changed = p.changes!.length > 0
      const current = p.current!
      p.row.outcome = this.done(
        p.row,
        changed ? 'updated' : 'unchanged',
        current.id,
        current.number,
        current.version + (changed ? 1 : 0)
      )
    }
    if (!isolate) {
      await changeRecords(client, this.writer, module, changing.map(changeOf))
      updates.forEach(updated)
    } else
      for (const p of updates)
        await this.isolated(client, p.row, async () => {
          if (p.changes!.length) await changeRecords(client, this.writer, module, [changeOf(p)])
          updated(p)
        })

    // New records, numbered by the statement (inside this transaction: upserts run one batch at a time).
    const creates = ok.filter((p) => !p.current).map((p) => p.row)
    if (!isolate) return this.insert(client, creates)
    for (const row of creates) await this.isolated(client, row, () => this.insert(client, [row]))
  }

  private done(
    row: Row,
    status: 'created' | 'updated' | 'unchanged',
    id: string,
    number: string,
    version: number
  ): Outcome {
    const ref = row.externalRef !== undefined ? { externalRef: row.externalRef } : {}
    if (this.dryRun)
      return {
        line: row.line,
        ...ref,
        status: 'valid',
        action: status === 'created' ? 'create' : status === 'updated' ? 'update' : 'none'
      }
    return { line: row.line, ...ref, status, id, number, version }
  }
}

/** Whether a database error refuses one row's data (SQLSTATE class 22 data exception, 23 integrity constraint, 54 program limit) rather than failing the batch. */
function refusesRow(err: unknown): boolean {
  return /^(22|23|54)/.test(String((err as { code?: unknown })?.code ?? ''))
}

/** The outcome problem of a row the database refused. */
function refusedProblem(err: unknown, moduleKey: string, externalRef: string | undefined): BulkRowProblem {
  const sqlState = String((err as { code?: unknown }).code)
  if (isExternalRefClash(err)) {
    return {
      status: 409,
      code: 'record.external_ref_taken',
      detail: `A live ${moduleKey} record with externalRef "${externalRef}" was created by another call meanwhile; send the row again to update it.`
    }
  }
  // Another unique key (a record number) clashing is the service's fault, not the row's.
  if (sqlState === '23505')
    return notLoaded(
      'The row clashed with a record written at the same time and was rolled back; the other rows are unaffected.'
    )
  return {
    status: 422,
    code: 'row.refused',
    detail: `The database refused this row (SQLSTATE ${sqlState}); it was not loaded. The other rows are unaffected. Quote the call's X-Trace-Id when reporting it.`,
    sqlState
  }
}

/** A row holding several objects: the body lost its newlines (the whole call is refused up front when its first row shows it: bulk.class.ts). */
const newlinesMissing = () => ({
  status: 400,
  code: 'bulk.newlines_missing',
  detail: newlinesMissingDetail('This line')
})

const notLoaded = (why: string) => ({
  status: 503,
  code: 'bulk.not_loaded',
  detail: `${why} The row was not loaded: send it again (with the same Idempotency-Key, a retry continues where this call stopped).`
})

/** A row of an upsert segment, checked: a create, or an update of the matched record. */
type Plan = { row: Row; payload: Record<string, unknown>; current?: RecordRow; changes?: FieldChange[] }

/** Splits rows into runs in which no external reference repeats, keeping order. */
function segments(rows: Row[]): Row[][] {
  const out: Row[][] = []
  let current: Row[] = []
  let seen = new Set<string>()
  for (const r of rows) {
    if (r.externalRef !== undefined && seen.has(r.externalRef)) {
      out.push(current)
      current = []
      seen = new Set()
    }
    if (r.externalRef !== undefined) seen.add(r.externalRef)
    current.push(r)
  }
  if (current.length) out.push(current)
  return out
}
