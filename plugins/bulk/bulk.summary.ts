import type { bulkOutcomes } from '../../core/telemetry/metrics.ts'
import type { BulkSummary, Outcome } from './bulk.schema.ts'

/** Row problem codes that are no verdict on the row: it was never attempted (past the row limit) or its batch failed, so sending it again can load it. */
const notFinal = new Set(['bulk.row_limit', 'request.too_costly', 'bulk.not_loaded'])

/** A row's outcome as the metrics count it (core/telemetry/metrics.ts bulkOutcomes): its status, or an error final or not. */
export function outcomeLabel(o: Outcome): (typeof bulkOutcomes)[number] {
  if (o.status !== 'error') return o.status
  return notFinal.has(o.problem.code) ? 'not_attempted' : 'error'
}

/**
 * Counts the outcomes of a call and says whether it is complete: every row of the body
 * read and given a final outcome (loaded, valid, or failed on its own merits). Rows
 * past the row limit and rows of a failed batch are `notAttempted`; a call that stopped
 * early (a failed batch, a body that could not be read, a client gone) is not complete
 * either. When not complete, `resumeAtLine` is the first line without a final outcome:
 * every line before it has one.
 */
export class BulkTally {
  private readonly counts = {
    rows: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    valid: 0,
    errors: 0,
    replayed: 0,
    notAttempted: 0
  }
  private firstNotFinal = Infinity
  private lastLine: number

  constructor(firstLine: number) {
    this.lastLine = firstLine - 1
  }

  /** A row was read (blank lines are not rows); returns how many so far. */
  row(): number {
    return ++this.counts.rows
  }

  count(o: Outcome): Outcome {
    if ((o as { replayed?: true }).replayed) this.counts.replayed++
    if (o.status === 'error') {
      this.counts.errors++
      if (notFinal.has(o.problem.code)) {
        this.counts.notAttempted++
        this.firstNotFinal = Math.min(this.firstNotFinal, o.line)
      }
    } else if (o.status === 'valid') this.counts.valid++
    else this.counts[o.status]++
    this.lastLine = Math.max(this.lastLine, o.line)
    return o
  }

  /** `readAll`: the body was read to its end and no batch failed. */
  summary(dryRun: boolean, readAll: boolean): BulkSummary {
    const complete = readAll && this.counts.notAttempted === 0
    return {
      ...this.counts,
      dryRun,
      complete,
      ...(complete ? {} : { resumeAtLine: Math.min(this.firstNotFinal, this.lastLine + 1) })
    }
  }
}
