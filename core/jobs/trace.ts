import type { JobDefinition } from './index.ts'
import { linkFrom, span, traceContextForJob, tracingEnabled } from '../telemetry/tracing.ts'

/**
 * A job whose every run is a span `job <name>`: a trace of its own (a job can outlive the request
 * by hours, and retries run again), linked to the span that enqueued it through `data.traceparent`.
 * With tracing off the job is returned as it is.
 */
export function tracedJob(job: JobDefinition): JobDefinition {
  if (!tracingEnabled()) return job
  return {
    ...job,
    run: (data, context) =>
      span(`job ${job.name}`, { 'job.name': job.name }, () => job.run(data, context), {
        root: true,
        links: linkFrom(data.traceparent)
      })
  }
}

/** Job data carrying the active span as `traceparent` (for tracedJob's link); `data` itself when tracing is off or no span is active. */
export function withTraceContext(data: Record<string, unknown>): Record<string, unknown> {
  const traceparent = traceContextForJob()
  return traceparent ? { ...data, traceparent } : data
}
