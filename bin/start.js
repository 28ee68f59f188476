#!/usr/bin/env node
// `npm start`: the service, from the compiled build when it is current, else from the sources
// (bin/runtime.js), in this very process. The npm script `exec`s node, so npm's child is this
// process with no shell between: the SIGTERM or SIGINT npm receives it forwards here, and npm
// exits only after the service has stopped (core/main.ts). Should npm die without forwarding
// anything (SIGKILL), this process notices that its parent changed and stops itself the same way.
import { chooseRuntime, followParent, importEntry, requireSupportedNode } from './runtime.js'

requireSupportedNode('The records service')
const runtime = chooseRuntime()
// Started by npm: live as long as npm does.
if (process.env.npm_lifecycle_event === 'start') followParent()
await importEntry('bin/server', runtime)
const { logger } = await importEntry('core/logger', runtime)
logger[runtime.stale ? 'warn' : 'info'](
  `running from ${runtime.from === 'build' ? 'the build (dist/)' : 'the TypeScript sources (tsx)'}`,
  { runtime: runtime.from, why: runtime.why, node: process.version }
)
