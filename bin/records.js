#!/usr/bin/env node
// The `records` admin CLI, from the compiled build when it is current, else from the TypeScript
// sources through tsx, as `npm start` chooses (bin/runtime.js); it hands core's CLI the
// plugins, whose commands (e.g. `token create`) join core's. `npx records` runs it on the
// project's own Node (node_modules/.bin/node comes first on npx's PATH).
import { chooseRuntime, importEntry, requireSupportedNode } from './runtime.js'

requireSupportedNode('The records CLI')
const runtime = chooseRuntime()
const { runCli } = await importEntry('core/cli/index', runtime)
const { plugins } = await importEntry('plugins/index', runtime)
process.exit(await runCli(process.argv.slice(2), plugins))
