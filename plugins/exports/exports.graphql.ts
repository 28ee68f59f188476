import { inputFields, outputFields } from '../../core/graphql/from-schema.ts'
import { callParams, withoutNulls, type GraphQLSchemaBuild, type Resolver } from '../../core/graphql/schema-part.ts'
import { exportDataSchema, exportJobSchema } from './exports.schema.ts'
import { exportFormats, exportsPath } from './exports.shared.ts'

/** The exports part of the GraphQL schema (`Plugin.graphql`): an export job (its REST output schema), and a mutation to start one, from the exports service. */
export function exportsGraphQL({ sc, query, mutation, lookup }: GraphQLSchemaBuild) {
  sc.createEnumTC({
    name: 'ExportFormat',
    values: Object.fromEntries(exportFormats.map((f) => [f.toUpperCase(), { value: f }]))
  })
  sc.createEnumTC({
    name: 'ExportValues',
    values: {
      KEYS: { value: 'keys', description: 'States and choices by key' },
      LABELS: { value: 'labels', description: 'By label, users by name' }
    }
  })
  // The job as REST answers it (exportJobSchema), less its links.
  sc.createObjectTC({
    name: 'Export',
    fields: outputFields(sc, exportJobSchema, {
      types: {
        format: 'ExportFormat',
        values: 'ExportValues',
        filters: 'JSON',
        download: 'SignedRequest',
        problem: 'JSON'
      },
      objects: { progress: 'ExportProgress', file: 'ExportFile' },
      omit: ['links']
    })
  })
  // The body of POST /api/v1/exports (exportDataSchema); the service validates it as it does REST's.
  sc.createInputTC({
    name: 'ExportInput',
    fields: inputFields(sc, exportDataSchema, {
      types: { format: 'ExportFormat', values: 'ExportValues', filters: 'JSON' }
    })
  })
  query.export = {
    type: 'Export',
    ...lookup,
    description: 'An export job and, once it succeeded, its download URL (GET /api/v1/exports/{id}).',
    args: { id: 'ID!' },
    resolve: ((_s, { id }, ctx) => ctx.app.service(exportsPath).get(id, callParams(ctx))) as Resolver
  }
  mutation.startExport = {
    type: 'Export',
    ...lookup,
    description: 'Starts an export job (POST /api/v1/exports); poll `export(id)` for its download.',
    args: { input: 'ExportInput!' },
    resolve: ((_s, { input }, ctx) =>
      ctx.app
        .service(exportsPath)
        .create(withoutNulls(input), callParams(ctx, { idempotencyKey: ctx.idempotencyKey }))) as Resolver
  }
}
