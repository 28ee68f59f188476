import type { HookContext, NextFunction } from '@feathersjs/feathers'
import { jsonDataProblems } from '../json-data.ts'
import { validationError } from '../validation.ts'

/**
 * Around hook on every service, after authentication: the body and the query of every
 * call, from any transport, hold only what PostgreSQL and plain JavaScript objects can
 * take (see core/json-data.ts). A refusal is a 400 `field.invalid` naming each place, so
 * no service, merge or idempotency fingerprint ever sees such a value.
 */
export const acceptJsonData = (context: HookContext, next: NextFunction) => {
  const { query } = context.params
  const { data } = context
  // Most reads carry an empty query and no body: nothing to walk (the walk finds nothing in either).
  if (!nothing(query) || !nothing(data)) {
    const found = [...jsonDataProblems(query), ...jsonDataProblems(data)]
    if (found.length) throw validationError(found)
  }
  return next()
}

const nothing = (v: unknown) => v === undefined || v === null || (typeof v === 'object' && Object.keys(v).length === 0)
