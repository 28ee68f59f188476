import t from '../helpers/tap.ts'
import {
  postmanSchema,
  toPostmanCollection,
  type PostmanCollection,
  type PostmanRequestItem
} from '../../plugins/api-docs/postman.ts'

const recordId = '3f6c1c9e-2b1d-4c8e-9f0a-1b2c3d4e5f60'
const idParam = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The record id (UUID).',
  schema: { type: 'string', format: 'uuid' },
  example: recordId
}

/** A small document shaped like the service's: tags, `{id}` and `{id}:transition`, JSON with `$ref`, NDJSON, a public operation. */
const doc = {
  openapi: '3.1.0',
  info: { title: 'Records Platform API: Acme', version: '0.1.0', description: 'The document for Acme.' },
  security: [{ bearerAuth: [] }],
  tags: [
    { name: 'Records', description: 'Records of the tenant’s modules.' },
    { name: 'Unused', description: 'A tag no operation has.' },
    { name: 'Bulk', description: 'Many records at once.' },
    { name: 'Attachments', description: 'Files.' }
  ],
  paths: {
    // Bulk first in path order, but its tag comes after Records: folders follow `tags`.
    '/api/v1/bulk/records': {
      post: {
        operationId: 'bulkRecords',
        tags: ['Bulk'],
        summary: 'Create or update many records',
        parameters: [{ $ref: '#/components/parameters/IdempotencyKey' }],
        requestBody: {
          required: true,
          content: {
            'application/x-ndjson': {
              schema: { type: 'array', items: { $ref: '#/components/schemas/RecordCreate' } },
              example: [
                { moduleKey: 'incident', payload: { title: 'Spill' } },
                { moduleKey: 'incident', payload: { title: 'Trip' } }
              ]
            }
          }
        },
        responses: { 200: { description: 'NDJSON outcomes.' } }
      }
    },
    '/api/v1/records': {
      get: {
        operationId: 'listRecords',
        tags: ['Records'],
        summary: 'List records of one module',
        description: 'Newest first.',
        parameters: [
          {
            name: 'moduleKey',
            in: 'query',
            required: true,
            description: 'The module whose records to list.',
            schema: { type: 'string' },
            example: 'incident'
          },
          {
            name: 'limit',
            in: 'query',
            required: false,
            description: 'Page size.',
            schema: { type: 'integer', default: 25 }
          },
          {
            name: 'state',
            in: 'query',
            required: false,
            description: 'Workflow states.',
            schema: { type: 'array', items: { type: 'string' } },
            example: ['open', 'closed']
          },
          {
            name: 'payload',
            in: 'query',
            required: false,
            description: 'Payload filters.',
            style: 'deepObject',
            explode: true,
            schema: { type: 'object' },
            example: { severity: 'high', site: 'Leeds DC' }
          },
          { name: 'session', in: 'cookie', required: false, schema: { type: 'string' } }
        ],
        responses: { 200: { description: 'A page.' } }
      },
      post: {
        operationId: 'createRecord',
        tags: ['Records'],
        summary: 'Create a record',
        parameters: [{ $ref: '#/components/parameters/IdempotencyKey' }],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/RecordCreate' } } }
        },
        responses: { 201: { description: 'Created.' } }
      }
    },
    '/api/v1/records/{id}': {
      parameters: [idParam],
      get: {
        operationId: 'getRecord',
        tags: ['Records'],
        summary: 'Get a record',
        responses: { 200: { description: 'The record.' } }
      },
      patch: {
        operationId: 'updateRecord',
        tags: ['Records'],
        summary: 'Change some payload fields',
        parameters: [{ $ref: '#/components/parameters/IfMatch' }],
        requestBody: {
          content: {
            'application/merge-patch+json': { schema: { type: 'object' }, example: { payload: { severity: 'high' } } }
          }
        },
        responses: { 200: { description: 'Changed.' } }
      }
    },
    '/api/v1/records/{id}:transition': {
      parameters: [idParam],
      post: {
        operationId: 'transitionRecord',
        tags: ['Records'],
        summary: 'Move a record through its workflow',
        description: 'Fires one transition.',
        requestBody: {
          content: {
            'application/json': {
              schema: { type: 'object', required: ['transition'], properties: { transition: { type: 'string' } } },
              examples: {
                start: { summary: 'Start', value: { transition: 'start-investigation' } },
                close: { summary: 'Close', value: { transition: 'close' } }
              }
            }
          }
        },
        responses: { 200: { description: 'Moved.' } }
      }
    },
    '/api/v1/attachments/{id}:complete': {
      post: {
        operationId: 'completeAttachment',
        tags: ['Attachments'],
        summary: 'Complete an upload',
        parameters: [
          {
            name: 'id',
            in: 'path',
            required: true,
            description: 'The attachment id.',
            schema: { type: 'string' },
            example: 'att_1'
          }
        ],
        responses: { 200: { description: 'Completed.' } }
      }
    },
    '/api/docs/spec.json': {
      get: { operationId: 'getOpenApiDocument', security: [], responses: { 200: { description: 'The document.' } } }
    }
  },
  components: {
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
    parameters: {
      IdempotencyKey: {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: 'Makes a retry safe.',
        schema: { type: 'string' },
        example: 'not-this-one'
      },
      IfMatch: {
        name: 'If-Match',
        in: 'header',
        required: false,
        description: 'The record ETag.',
        schema: { type: 'string' },
        example: '"3"'
      }
    },
    schemas: {
      RecordCreate: {
        type: 'object',
        required: ['moduleKey', 'payload'],
        properties: {
          moduleKey: { type: 'string', enum: ['incident', 'inspection'] },
          payload: { $ref: '#/components/schemas/Payload' },
          externalRef: { type: 'string' }
        }
      },
      Payload: {
        type: 'object',
        required: ['title', 'occurredAt', 'severity', 'people', 'injured', 'parent'],
        properties: {
          title: { type: 'string', examples: ['Forklift clipped racking'] },
          occurredAt: { type: 'string', format: 'date-time' },
          severity: { type: 'string', enum: ['low', 'medium', 'high'], default: 'medium' },
          people: { type: ['integer', 'null'] },
          injured: { anyOf: [{ type: 'null' }, { type: 'boolean' }] },
          // A cycle: the skeleton must stop here rather than recurse for ever.
          parent: { $ref: '#/components/schemas/Payload' },
          notes: { type: 'string' }
        }
      }
    }
  }
}

const collection = toPostmanCollection(doc, { baseUrl: 'https://records.example.com/', name: 'Acme records' })
const requests = collection.item.flatMap((f) => f.item)
const named = (name: string): PostmanRequestItem['request'] => {
  const found = requests.find((i) => i.name === name)
  if (!found) throw new Error(`no request named ${name}`)
  return found.request
}

/**
 * The URL Postman sends, resolved the way Postman does: `{{name}}` from the collection
 * variables, and a segment starting with `:` replaced whole (up to the next `/`) by the
 * path variable of that name, or by nothing when there is none.
 */
function sentUrl(c: PostmanCollection, request: PostmanRequestItem['request']): string {
  const vars = new Map(c.variable.map((v) => [v.key, v.value]))
  const pathVars = new Map((request.url.variable ?? []).map((v) => [v.key, v.value]))
  const path = (request.url.path ?? []).map((s) => (s.startsWith(':') ? (pathVars.get(s.slice(1)) ?? '') : s)).join('/')
  const query = (request.url.query ?? []).filter((q) => !q.disabled).map((q) => `${q.key}=${q.value}`)
  const raw = `${request.url.host.join('.')}/${path}${query.length ? `?${query.join('&')}` : ''}`
  return raw.replace(/\{\{([^}]+)\}\}/g, (_, k: string) => vars.get(k) ?? `{{${k}}}`)
}

t.test(
  'the collection is v2.1 with the given name, the document’s description and version, and the baseUrl and token variables',
  async (t) => {
    t.equal(collection.info.schema, 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json')
    t.equal(collection.info.schema, postmanSchema)
    t.same(
      { ...collection.info, description: undefined },
      { name: 'Acme records', description: undefined, version: '0.1.0', schema: postmanSchema }
    )
    t.match(
      collection.info.description,
      /^\*\*Running this collection writes to the tenant of your `token`\.\*\* In order, it sends “Create a record”, /,
      'the description starts by saying what a run writes'
    )
    t.ok(collection.info.description?.endsWith('\n\nThe document for Acme.'), 'then the document’s own description')
    t.equal(
      toPostmanCollection(doc, { baseUrl: 'http://x' }).info.name,
      'Records Platform API: Acme',
      'the document title without a name'
    )
    t.same(
      collection.variable.slice(0, 2),
      [
        { key: 'baseUrl', value: 'https://records.example.com', type: 'string' },
        {
          key: 'token',
          value: '',
          type: 'string',
          description: 'A bearer token: an API key, personal access token or service account token.'
        }
      ],
      'baseUrl without its trailing slash, token empty'
    )
  }
)

t.test(
  'there is one folder per tag in the order of the document’s tags, tags without operations left out and untagged operations last',
  async (t) => {
    t.same(
      collection.item.map((f) => f.name),
      ['Records', 'Bulk', 'Attachments', 'Other']
    )
    t.equal(
      collection.item[0].description,
      'Records of the tenant’s modules.\n\nRunning this folder writes to your tenant: “Create a record”, “Change some payload fields”, “Move a record through its workflow”.'
    )
    t.same(
      collection.item[0].item.map((i) => `${i.request.method} ${i.name}`),
      [
        'GET List records of one module',
        'POST Create a record',
        'GET Get a record',
        'PATCH Change some payload fields',
        'POST Move a record through its workflow'
      ],
      'requests in path order, methods in the path’s order'
    )
    t.same(
      collection.item[3].item.map((i) => i.name),
      ['getOpenApiDocument'],
      'named by operationId without a summary'
    )
  }
)

t.test('a whole-segment path parameter becomes a Postman path variable with its description and example', async (t) => {
  const get = named('Get a record')
  t.equal(get.url.raw, '{{baseUrl}}/api/v1/records/:id')
  t.same(get.url.host, ['{{baseUrl}}'])
  t.same(get.url.path, ['api', 'v1', 'records', ':id'])
  t.same(get.url.variable, [{ key: 'id', value: recordId, description: 'The record id (UUID).' }])
  t.equal(sentUrl(collection, get), `https://records.example.com/api/v1/records/${recordId}`)
})

t.test(
  'a parameter followed by a literal colon is a {{records.id}} collection variable, so Postman sends /records/<id>:transition',
  async (t) => {
    const transition = named('Move a record through its workflow')
    t.equal(transition.url.raw, '{{baseUrl}}/api/v1/records/{{records.id}}:transition')
    t.same(transition.url.path, ['api', 'v1', 'records', '{{records.id}}:transition'])
    t.notOk(
      (transition.url.path ?? []).some((s) => s.startsWith(':')),
      'no segment Postman would read as a path variable named "id:transition"'
    )
    t.equal(transition.url.variable, undefined)
    t.same(
      collection.variable.find((v) => v.key === 'records.id'),
      { key: 'records.id', value: recordId, description: 'The record id (UUID).', type: 'string' },
      'the collection variable holds the example and the description'
    )
    t.equal(sentUrl(collection, transition), `https://records.example.com/api/v1/records/${recordId}:transition`)
  }
)

t.test('an {id} of another resource before a colon gets its own collection variable, not the record’s', async (t) => {
  const complete = named('Complete an upload')
  t.equal(complete.url.raw, '{{baseUrl}}/api/v1/attachments/{{attachments.id}}:complete')
  t.equal(sentUrl(collection, complete), 'https://records.example.com/api/v1/attachments/att_1:complete')
  t.same(
    collection.variable.slice(2).map((v) => [v.key, v.value]),
    [
      ['records.id', recordId],
      ['attachments.id', 'att_1']
    ],
    'one variable per resource, in path order'
  )
})

t.test(
  'query parameters carry description and example and are enabled only when required; arrays repeat the key and deepObject becomes name[key]',
  async (t) => {
    const list = named('List records of one module')
    t.same(list.url.query, [
      { key: 'moduleKey', value: 'incident', description: 'The module whose records to list.' },
      { key: 'limit', value: '25', description: 'Page size.', disabled: true },
      { key: 'state', value: 'open', description: 'Workflow states.', disabled: true },
      { key: 'state', value: 'closed', description: 'Workflow states.', disabled: true },
      { key: 'payload[severity]', value: 'high', description: 'Payload filters.', disabled: true },
      { key: 'payload[site]', value: 'Leeds DC', description: 'Payload filters.', disabled: true }
    ])
    t.equal(list.url.raw, '{{baseUrl}}/api/v1/records?moduleKey=incident', 'the raw URL has the enabled ones only')
    t.equal(list.description, 'Newest first.', 'the operation description is carried over')
    t.same(list.header, [], 'no header for a cookie parameter: Postman’s cookie jar sends cookies')
  }
)

t.test(
  'Idempotency-Key is a disabled header with a fresh {{$guid}}, and other header parameters keep their example',
  async (t) => {
    t.same(named('Create a record').header, [
      { key: 'Content-Type', value: 'application/json' },
      { key: 'Idempotency-Key', value: '{{$guid}}', description: 'Makes a retry safe.', disabled: true }
    ])
    t.same(named('Change some payload fields').header, [
      { key: 'Content-Type', value: 'application/merge-patch+json' },
      { key: 'If-Match', value: '"3"', description: 'The record ETag.', disabled: true }
    ])
  }
)

t.test(
  'a JSON body is the example, else the first named example, else a skeleton of the schema following $ref and stopping at a cycle',
  async (t) => {
    const patch = named('Change some payload fields').body
    t.same(patch?.options, { raw: { language: 'json' } })
    t.same(JSON.parse(patch?.raw ?? ''), { payload: { severity: 'high' } }, 'a +json type uses its example')
    t.same(
      JSON.parse(named('Move a record through its workflow').body?.raw ?? ''),
      { transition: 'start-investigation' },
      'the first of examples'
    )
    const create = named('Create a record').body
    t.equal(create?.mode, 'raw')
    t.same(
      JSON.parse(create?.raw ?? ''),
      {
        moduleKey: 'incident',
        payload: {
          title: 'Forklift clipped racking',
          occurredAt: '2026-01-01T00:00:00Z',
          severity: 'medium',
          people: 0,
          injured: true,
          parent: {}
        }
      },
      'required properties only, from examples, formats, defaults and types; the nested Payload is not expanded twice'
    )
    t.equal(create?.raw, JSON.stringify(JSON.parse(create?.raw ?? ''), null, 2), 'pretty-printed')
    t.equal(named('Get a record').body, undefined, 'no body without a requestBody')
  }
)

t.test('an NDJSON body is raw text with one example value per line and its own content type', async (t) => {
  const bulk = named('Create or update many records')
  t.same(bulk.body, {
    mode: 'raw',
    raw: '{"moduleKey":"incident","payload":{"title":"Spill"}}\n{"moduleKey":"incident","payload":{"title":"Trip"}}\n',
    options: { raw: { language: 'text' } }
  })
  t.same(bulk.header[0], { key: 'Content-Type', value: 'application/x-ndjson' })
  t.same(bulk.header[1], {
    key: 'Idempotency-Key',
    value: '{{$guid}}',
    description: 'Makes a retry safe.',
    disabled: true
  })
})

t.test(
  'the collection authenticates with the {{token}} bearer token, and operations with security: [] send no credential',
  async (t) => {
    t.same(collection.auth, { type: 'bearer', bearer: [{ key: 'token', value: '{{token}}', type: 'string' }] })
    t.same(named('getOpenApiDocument').auth, { type: 'noauth' })
    t.equal(named('Get a record').auth, undefined, 'the others inherit the collection’s auth')
    const open = toPostmanCollection({ ...doc, security: [] }, { baseUrl: 'http://x' })
    t.same(
      open.item[0].item[0].request.auth,
      { type: 'noauth' },
      'a document-level security: [] applies to operations without their own'
    )
  }
)

t.test('the same document gives the same JSON, and the document is not changed', async (t) => {
  const before = JSON.stringify(doc)
  const again = toPostmanCollection(JSON.parse(before), {
    baseUrl: 'https://records.example.com/',
    name: 'Acme records'
  })
  t.equal(JSON.stringify(again), JSON.stringify(collection))
  t.equal(JSON.stringify(doc), before)
})

t.test('a path parameter named like a collection variable does not shadow it', async (t) => {
  const c = toPostmanCollection(
    {
      paths: {
        '/{token}:revoke': { post: { parameters: [{ name: 'token', in: 'path', required: true, example: 'svc_k_1' }] } }
      }
    },
    { baseUrl: 'http://x' }
  )
  const { name, request } = c.item[0].item[0]
  t.equal(request.url.raw, '{{baseUrl}}/{{tokenParam}}:revoke')
  t.same(
    c.variable.map((v) => [v.key, v.value]),
    [
      ['baseUrl', 'http://x'],
      ['token', ''],
      ['tokenParam', 'svc_k_1']
    ]
  )
  t.equal(name, 'POST /{token}:revoke', 'named by method and path without summary or operationId')
})

t.test('a skeleton merges the object parts of allOf with the schema’s own required properties', async (t) => {
  const c = toPostmanCollection(
    {
      paths: {
        '/things': {
          post: {
            requestBody: {
              content: {
                'application/json': {
                  schema: {
                    allOf: [{ $ref: '#/components/schemas/Named' }],
                    required: ['size'],
                    properties: { size: { type: 'integer' } }
                  }
                }
              }
            }
          }
        }
      },
      components: {
        schemas: { Named: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } }
      }
    },
    { baseUrl: 'http://x' }
  )
  t.same(JSON.parse(c.item[0].item[0].request.body?.raw ?? ''), { name: '<string>', size: 0 })
})
