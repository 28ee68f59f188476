import type { HookContext, NextFunction, Params, Query } from '@feathersjs/feathers'
import type { Principal } from '../auth/principal.ts'

/**
 * What a service call says besides its data, in transport-neutral fields: services read
 * these, never HTTP headers or routes. The REST layer fills them (`fromHttp` below);
 * GraphQL resolvers, the CLI and jobs set them directly.
 */
export interface CallParams<Q = Query> extends Params<Q> {
  /** Who calls: set by authentication for REST, given by internal callers (systemPrincipal). */
  principal?: Principal
  /** The record versions a change is conditional on (REST: `If-Match`). */
  ifMatch?: string
  /** The client's key that makes a write safe to retry (REST: `Idempotency-Key`). */
  idempotencyKey?: string
  /** The target of a custom method (REST: the `{id}` of `POST <path>/{id}:<method>`). */
  id?: string
}

/** Around hook on every service, first: a REST call's headers and colon-method id as call params. */
export function fromHttp(context: HookContext, next: NextFunction) {
  const params = context.params as CallParams & {
    headers?: Record<string, string | undefined>
    route?: { id?: string }
  }
  if (params.provider && params.headers) {
    params.ifMatch ??= params.headers['if-match']
    params.idempotencyKey ??= params.headers['idempotency-key']
  }
  if (params.provider && context.id === undefined && params.route?.id !== undefined) params.id ??= params.route.id
  return next()
}
