import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { CallParams } from './call-params.ts'
import { span, tracingEnabled } from '../telemetry/tracing.ts'

const apiPrefix = /^api\/(v\d+\/)?/

/**
 * Around hook on every service, outermost: each call is a span named `<path>.<method>` with the
 * path's `api/v1/` left out (`records.find`), from every transport, so a REST, GraphQL, SCIM or
 * bulk request shows the calls it made and the statements under each. With tracing off it only
 * passes the call on.
 */
export const traceCalls = (context: HookContext, next: NextFunction) => {
  if (!tracingEnabled()) return next()
  return span(
    `${context.path.replace(apiPrefix, '')}.${context.method}`,
    {
      'feathers.service': context.path,
      'feathers.method': context.method,
      'feathers.provider': context.params.provider
    },
    async (s) => {
      try {
        await next()
      } finally {
        // Known once authentication ran, inside the call.
        const tenant = (context.params as CallParams).principal?.tenantId
        if (tenant) s.setAttribute('tenant', tenant)
      }
    }
  )
}

/** The around hooks to register for tracing: `[traceCalls]` when tracing is on; none when off, so a call pays nothing for it. */
export const tracingHooks = () => (tracingEnabled() ? [traceCalls] : [])
