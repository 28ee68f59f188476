// `npm start`: the composition root. Core knows no plugin; this hands it the list.
import { startTracing } from '../core/telemetry/start.ts'

// Before the app is imported: the tracing instrumentations patch koa, pg and http as they load.
await startTracing()
const { serve, startFailed } = await import('../core/main.ts')
const { plugins } = await import('../plugins/index.ts')

await serve(plugins).catch(startFailed)
