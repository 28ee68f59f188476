/**
 * The JSON Schema of a module definition for editors and tools (`packages/module-sdk/module-definition.schema.json`, published with the SDK),
 * written from the one source of it, `moduleDefinitionSchema` (core/modules/definition-schema.ts).
 * `npm run schemas` rewrites the file; `--check` exits 1 when it is stale
 * (test/modules/definition-schema.test.ts does the same).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { moduleDefinitionSchema } from '../core/modules/definition-schema.ts'
import { projectRoot } from '../core/paths.ts'

export const schemaFile = join(projectRoot, 'packages', 'module-sdk', 'module-definition.schema.json')

/** The file's text: draft 2020-12, the schema's members in TypeBox's order, two-space indented. */
export function renderModuleSchema(): string {
  const { $id, title, ...rest } = moduleDefinitionSchema
  const doc = { $schema: 'https://json-schema.org/draft/2020-12/schema', $id, title, ...rest }
  return `${JSON.stringify(doc, null, 2)}\n`
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = renderModuleSchema()
  if (process.argv.includes('--check')) {
    const current = readFileSync(schemaFile, 'utf8')
    if (current !== text) {
      console.error(`${schemaFile} is stale: run npm run schemas`)
      process.exit(1)
    }
  } else writeFileSync(schemaFile, text)
}
