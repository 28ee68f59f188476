import type { HookContext, NextFunction } from '@feathersjs/feathers'
import { charge } from '../limits/budget.ts'

/** Units a service call costs before it runs: the lookup itself (authorization, a statement or two). */
export const callUnits = 5

/**
 * Around hook on every service, from every transport: each call is charged to the request's
 * budget (core/limits/budget.ts) before it runs, and the rows it answers with once it has,
 * so a request that makes thousands of lookups (GraphQL aliases, a client looping inside one
 * SCIM or bulk call) runs out of budget however it got there. Calls outside a request (jobs,
 * CLI) run on no budget.
 */
export const meterCalls = async (context: HookContext, next: NextFunction) => {
  charge(callUnits, `${context.path} ${context.method}`)
  await next()
  const result = context.result as { items?: unknown[]; data?: unknown[] } | unknown[] | undefined
  const rows = Array.isArray(result)
    ? result.length
    : Array.isArray(result?.items)
      ? result.items.length
      : Array.isArray(result?.data)
        ? result.data.length
        : 0
  if (rows) charge(rows, 'rows read')
}
