import type { HookContext, NextFunction } from '@feathersjs/feathers'
import { jsonDataProblems } from '../json-data.ts'
import { validationError } from '../validation.ts'

/**
 * Around hook on every service, after authentication: the body and the query of every
 * call, from any transport, hold only what PostgreSQL and plain JavaScript objects can
 * take (see core/json-data.ts). A refusal is a 400 `field.invalid` naming each place, so
 * no service, merge or idempotency fingerprint ever sees such a value.
 */
export const acceptJsonData = async (context: HookContext, next: NextFunction) => {
  const found = [...jsonDataProblems(context.params.query), ...jsonDataProblems(context.data)]
  if (found.length) throw validationError(found)
  await next()
}
