import { exportColumns } from '../../core/modules/derive/columns.ts'
import {
  discriminated,
  operation,
  pascal,
  pathParam,
  toDocumentSchema,
  type DocContext,
  type Fragment,
  type JsonSchema
} from '../../core/openapi/builder.ts'
import { signedDownload } from '../attachments/attachments.shared.ts'
import { exportDataSchema, exportJobSchema, exportProblemSchema } from './exports.schema.ts'
import { exportFormats } from './exports.shared.ts'

const tag = 'Exports'
const exampleId = '7d2e9c4a-1b3f-4e5d-8a6b-9c0d1e2f3a4b'
/** A finished job, for examples. */
const exampleJob = {
  id: exampleId,
  moduleKey: 'incident',
  format: 'csv',
  status: 'succeeded',
  filters: { state: 'reported' },
  columns: ['number', 'state', 'createdAt'],
  values: 'keys',
  progress: { rowsDone: 1250, rowsTotal: 1250 },
  queuePosition: null,
  attempts: 1,
  createdAt: '2026-11-22T09:15:00.000Z',
  startedAt: '2026-11-22T09:15:00.250Z',
  finishedAt: '2026-11-22T09:15:02.900Z',
  expiresAt: '2026-11-23T09:15:02.900Z',
  links: { self: `/api/v1/exports/${exampleId}` },
  file: { name: 'incident-export-2026-11-22.csv', contentType: 'text/csv; charset=utf-8', size: 183406 },
  download: {
    method: 'GET',
    url: `https://records.example.com/storage/acme/exports/${exampleId}?method=GET&expires=1795425602&type=text%2Fcsv%3B+charset%3Dutf-8&name=incident-export-2026-11-22.csv&sig=q3Zl0wXb7cUe9Hk2TtV1sRmN4yPz8aGf5jDiLoE6nBc`,
    headers: {},
    expiresAt: '2026-11-22T09:20:02.000Z'
  }
}

/** The job in each state: the members that state fixes, on top of `ExportJobBase` (`exportJobSchema`). */
function states(ctx: DocContext): Record<string, JsonSchema> {
  const o = ctx.config.exports
  return {
    queued: {
      description:
        "Waiting for one of the tenant's export slots; `queuePosition` is its place (1 = next). Exports run in the order they were asked for.",
      required: ['queuePosition'],
      properties: {
        queuePosition: { type: 'integer', minimum: 1 },
        startedAt: { type: 'null' },
        finishedAt: { type: 'null' },
        expiresAt: { type: 'null' }
      }
    },
    running: {
      description: `Rendering; \`progress\` counts the rows read and committed so far (they are kept page by page, and the file is made from them once all are read). A run whose process died is taken over after ${o.lockSeconds} s and goes on from the last committed page, not from the start (\`attempts\` + 1); the job fails after ${o.maxAttempts} such starts. An instance that shuts down hands its exports over at once to another, which also goes on where it stopped; that is not an attempt.`,
      properties: {
        queuePosition: { type: 'null' },
        startedAt: { type: 'string', format: 'date-time' },
        finishedAt: { type: 'null' },
        expiresAt: { type: 'null' }
      }
    },
    succeeded: {
      description: `Done: \`file\` and \`download\` (a signed URL, short-lived: ask again for a fresh one) until \`expiresAt\` (${o.fileHours} hours after it finished).`,
      required: ['file', 'download'],
      properties: {
        queuePosition: { type: 'null' },
        finishedAt: { type: 'string', format: 'date-time' },
        expiresAt: { type: 'string', format: 'date-time' }
      }
    },
    failed: {
      description: 'Final: `problem` says why; nothing was stored.',
      required: ['problem'],
      properties: {
        queuePosition: { type: 'null' },
        finishedAt: { type: 'string', format: 'date-time' },
        expiresAt: { type: 'null' }
      }
    },
    expired: {
      description: `Final: the file was removed ${o.fileHours} hours after it finished; start a new export.`,
      properties: {
        queuePosition: { type: 'null' },
        finishedAt: { type: 'string', format: 'date-time' },
        expiresAt: { type: 'string', format: 'date-time' }
      }
    }
  }
}

export function describeExports(ctx: DocContext): Fragment {
  const limits = { ...ctx.config.limits, ...(ctx.tenant ? ctx.config.tenants[ctx.tenant.id]?.limits : undefined) }
  const data = toDocumentSchema(exportDataSchema)
  data.properties.format = { type: 'string', enum: [...exportFormats] }
  // A tenant document types `moduleKey` and `columns` per module, told apart by `moduleKey`.
  const perModule = ctx.modules.map((m) => {
    const d = m.definition
    return ctx.ref(
      {
        ...data,
        title: `${d.title} export`,
        properties: {
          ...data.properties,
          moduleKey: { type: 'string', const: d.key },
          columns: {
            ...data.properties.columns,
            items: { type: 'string', enum: exportColumns(m, { hidden: new Set() }).map((c) => c.key) }
          }
        }
      },
      `${pascal(d.key)}ExportCreate`
    )
  })
  const body: JsonSchema = !perModule.length
    ? ctx.ref(data, 'ExportCreate')
    : discriminated(
        'moduleKey',
        ctx.modules.map((m, i) => [m.definition.key, perModule[i]])
      )

  const problem = ctx.ref(toDocumentSchema(exportProblemSchema), 'ExportProblem')
  // The job in any state, from its TypeBox schema; the signed URL and the problem as the document names them elsewhere.
  const any = toDocumentSchema(exportJobSchema)
  const base = ctx.ref(
    {
      ...any,
      properties: {
        ...any.properties,
        links: {
          ...any.properties.links,
          properties: { self: { type: 'string', examples: [`/api/v1/exports/${exampleId}`] } }
        },
        download: signedDownload(ctx),
        problem
      }
    },
    'ExportJobBase'
  )
  const variants = Object.entries(states(ctx)).map(([status, s]) => {
    const { description, ...rest } = s
    return [
      status,
      ctx.ref(
        {
          title: `Export job: ${status}`,
          description,
          allOf: [base, { type: 'object', ...rest, properties: { status: { const: status }, ...rest.properties } }]
        },
        `ExportJob${pascal(status)}`
      )
    ] as const
  })
  const job = ctx.ref(
    discriminated('status', variants, {
      title: 'Export job',
      description:
        'queued → running → succeeded → expired, or failed. Poll `GET /api/v1/exports/{id}` until `succeeded` or `failed`.'
    }),
    'ExportJob'
  )
  const first = ctx.modules[0]?.definition
  const { file: _file, download: _download, ...queuedJob } = exampleJob
  return {
    tags: [
      {
        name: tag,
        description: `Background exports of a module's records to CSV, XLSX or PDF, selected as the list endpoint selects them, rendered with the requester's rights. At most ${limits.exportConcurrency} run at once per tenant; more are queued, never refused.`
      }
    ],
    paths: {
      '/api/v1/exports': {
        post: operation({
          operationId: 'createExport',
          tag,
          summary: 'Start an export',
          description:
            "Checks everything the render will need (the module, the `export` and `read` rights, the filters as the list endpoint validates them, the columns) and queues the job; follow it at `Location`. Filters of `GET /api/v1/records` apply (`state`, `createdSince`, `createdBefore`, `updatedSince`, `updatedBefore`, `sort`, `q`, `numberPrefix`, `createdBy`, `externalRef`, `includeDeleted`, `payload`), and the caller's row rule selects the rows. A column the caller may not read is 403 `field.forbidden`; an unknown one 400. User fields are written as the user's name, with the id in the `<field>.id` column beside it; `values: labels` writes states and choices by their labels. Without `columns`, a PDF shows Number, State, the module's summary columns (`GET /api/v1/modules/{key}`) and Created.",
          scope: 'exports:write',
          idempotent: true,
          body: {
            schema: body,
            example: {
              moduleKey: first?.key ?? 'incident',
              format: 'csv',
              filters: { state: first?.workflow.initial ?? 'reported' },
              columns: ['number', 'state', 'createdAt'],
              csvBom: true
            }
          },
          responses: {
            202: {
              description: 'The job, queued.',
              schema: job,
              headers: ['Location'],
              example: {
                ...queuedJob,
                status: 'queued',
                progress: { rowsDone: 0, rowsTotal: null },
                queuePosition: 1,
                attempts: 0,
                startedAt: null,
                finishedAt: null,
                expiresAt: null
              }
            }
          },
          problems: [404, 409, 413, 415, 422, 503]
        })
      },
      '/api/v1/exports/{id}': {
        parameters: [pathParam('id', 'The export id (UUID).', { type: 'string', format: 'uuid' }, exampleId)],
        get: operation({
          operationId: 'getExport',
          tag,
          summary: 'Follow an export',
          description:
            'The job in its current state; once `succeeded`, with `file` and a fresh signed `download` URL (a GET needing no credential) until the file expires. An export is visible to whoever asked for it and to tenant admins; to anyone else it is 404.',
          scope: 'exports:read',
          responses: { 200: { description: 'The job.', schema: job, example: exampleJob } },
          problems: [404]
        })
      }
    }
  }
}
