import { AsyncLocalStorage } from 'node:async_hooks'
import { ApiError } from '../errors/index.ts'

/**
 * The work one request may do, metered where the work is done, on every transport (REST,
 * bulk rows, GraphQL, SCIM). A unit is roughly one small step of work: a field resolved,
 * a row read, an array element touched, a lookup made; code that does heavier steps
 * charges more units per step. Work is charged *before* it is done, so a request past its
 * budget stops without having done it (`request.too_costly`, 422; a write rolls back).
 *
 * The budget also feeds the rate limit: a request counts as one request per
 * `unitsPerRequest` units it is charged (at least one), so ten expensive operations in
 * one GraphQL document cost what the same work in ten calls would (README, "Work budget").
 */
export class Budget {
  /** Units charged so far. */
  spent = 0
  /** Units charged, by what they were charged for (for the problem body and the log). */
  readonly spentOn: Record<string, number> = Object.create(null)
  /** Requests already counted against the rate limit for this request. */
  private rateCounted = 1

  constructor(
    readonly limit: number,
    readonly unitsPerRequest: number,
    /** Counts `extra` more requests against the caller's rate limit; rejects (429) when they do not fit. */
    private readonly countRequests?: (extra: number) => Promise<void>
  ) {}

  /** Units left before the request is refused. */
  get remaining(): number {
    return Math.max(0, this.limit - this.spent)
  }

  /** Whether `units` more would still fit. */
  fits(units: number): boolean {
    return this.spent + units <= this.limit
  }

  /** Charges `units` of `what` before doing it; past the budget, throws `request.too_costly` and charges nothing. */
  charge(units: number, what: string): void {
    if (!Number.isFinite(units) || units < 0)
      throw new RangeError(`budget charge must be a finite number >= 0, got ${units}`)
    if (this.spent + units > this.limit) throw tooCostly(this, units, what)
    this.spent += units
    this.spentOn[what] = (this.spentOn[what] ?? 0) + units
  }

  /**
   * For work whose cost is known up front (a GraphQL operation after validation): charges it
   * and counts it against the rate limit now, so an operation the caller cannot afford is
   * refused before it starts.
   */
  async reserve(units: number, what: string): Promise<void> {
    this.charge(units, what)
    await this.settleRate()
  }

  /** Counts what this request has been charged against the rate limit, beyond what was counted already. */
  async settleRate(): Promise<void> {
    const requests = Math.max(1, Math.ceil(this.spent / this.unitsPerRequest))
    const extra = requests - this.rateCounted
    if (extra <= 0 || !this.countRequests) return
    this.rateCounted = requests
    await this.countRequests(extra)
  }
}

function tooCostly(budget: Budget, units: number, what: string): ApiError {
  return new ApiError(
    'unprocessable',
    'request.too_costly',
    `This request would do more work than one request may (${budget.limit} units; ${budget.spent} spent, ${units} more asked for ${what}). Nothing was changed. Ask for less at once: smaller pages, fewer fields, fewer operations or items per request.`,
    { budget: budget.limit, spent: budget.spent, asked: units, for: what }
  )
}

/** A budget with no limit, for named system work (jobs, the CLI, migrations): never refuses. */
export const unlimitedBudget = (): Budget => new Budget(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY)

const current = new AsyncLocalStorage<Budget>()

/** Runs `fn` with `budget` as the current request's budget (the HTTP layer does this for every request). */
export function withBudget<T>(budget: Budget, fn: () => T): T {
  return current.run(budget, fn)
}

/**
 * The budget of the request this code runs for. Outside any request (jobs, CLI, start-up)
 * an unlimited one: system work is bounded by its own batch sizes, not by a caller's budget.
 */
export function currentBudget(): Budget {
  return current.getStore() ?? unlimitedBudget()
}

/** Charges the current request's budget; see Budget.charge. */
export function charge(units: number, what: string): void {
  current.getStore()?.charge(units, what)
}
