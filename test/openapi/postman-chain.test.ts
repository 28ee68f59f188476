import t from '../helpers/tap.ts'
import { toPostmanCollection, type PostmanRequestItem } from '../../plugins/api-docs/postman.ts'

/**
 * How the collection chains requests, on a small document shaped like the service's: a
 * record created by POST and addressed by `{id}`, an attachment taking `recordId` and
 * answering a signed upload link, a token whose response carries a credential, deletes.
 */
const ok = (status: number, schema?: object) => ({
  [status]: { description: 'OK.', ...(schema ? { content: { 'application/json': { schema } } } : {}) }
})
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' }, example: 'rec-example' }
const doc = {
  openapi: '3.1.0',
  info: { title: 'T', version: '1' },
  tags: [{ name: 'Records' }, { name: 'Attachments' }, { name: 'Tokens' }],
  paths: {
    '/api/v1/records': {
      get: { operationId: 'listRecords', tags: ['Records'], summary: 'List records', responses: ok(200) },
      post: {
        operationId: 'createRecord',
        tags: ['Records'],
        summary: 'Create a record',
        requestBody: { content: { 'application/json': { schema: { type: 'object' }, example: { title: 'x' } } } },
        responses: ok(201, { $ref: '#/components/schemas/Record' })
      }
    },
    '/api/v1/records/{id}': {
      parameters: [idParam],
      get: { operationId: 'getRecord', tags: ['Records'], summary: 'Get a record', responses: ok(200) },
      delete: { operationId: 'deleteRecord', tags: ['Records'], summary: 'Delete a record', responses: ok(200) }
    },
    '/api/v1/records/{id}:close': {
      parameters: [idParam],
      post: { operationId: 'closeRecord', tags: ['Records'], summary: 'Close a record', responses: ok(200) }
    },
    '/api/v1/attachments': {
      post: {
        operationId: 'createAttachment',
        tags: ['Attachments'],
        summary: 'Ask for an upload URL',
        requestBody: {
          content: { 'application/json': { schema: { type: 'object' }, example: { recordId: 'rec-example', size: 3 } } }
        },
        responses: ok(201, {
          allOf: [
            { $ref: '#/components/schemas/Record' },
            {
              type: 'object',
              required: ['upload', 'size'],
              properties: {
                size: { type: 'integer' },
                upload: {
                  type: 'object',
                  required: ['method', 'url'],
                  properties: { method: { const: 'PUT' }, url: { type: 'string' }, headers: { type: 'object' } }
                }
              }
            }
          ]
        })
      }
    },
    '/api/v1/attachments/{id}': {
      get: {
        operationId: 'getAttachment',
        tags: ['Attachments'],
        summary: 'Get an attachment',
        parameters: [{ ...idParam, example: 'att-example' }],
        responses: ok(200)
      }
    },
    '/storage/{key}': {
      put: {
        operationId: 'upload',
        tags: ['Attachments'],
        summary: 'Upload the bytes',
        security: [],
        parameters: [
          { name: 'key', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'sig', in: 'query', required: true, schema: { type: 'string' } }
        ],
        requestBody: { content: { '*/*': {} } },
        responses: ok(200)
      }
    },
    '/api/v1/audit-log': {
      get: {
        operationId: 'audit',
        tags: ['Records'],
        summary: 'Read the history',
        parameters: [{ name: 'recordId', in: 'query', required: false, schema: { type: 'string' } }],
        responses: ok(200)
      }
    },
    '/api/v1/tokens': {
      post: {
        operationId: 'createToken',
        tags: ['Tokens'],
        summary: 'Create a token',
        responses: ok(201, { type: 'object', properties: { id: { type: 'string' }, token: { type: 'string' } } })
      }
    },
    '/api/v1/tokens/{id}': {
      delete: {
        operationId: 'revokeToken',
        tags: ['Tokens'],
        summary: 'Revoke a token',
        parameters: [idParam],
        responses: ok(200)
      }
    }
  },
  components: { schemas: { Record: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } } }
}

const collection = toPostmanCollection(doc, { baseUrl: 'http://localhost' })
const requests = collection.item.flatMap((f) => f.item)
const named = (name: string): PostmanRequestItem => {
  const found = requests.find((i) => i.name === name)
  if (!found) throw new Error(`no request named ${name}`)
  return found
}
const scriptOf = (name: string, listen: 'test' | 'prerequest') =>
  named(name)
    .event?.find((e) => e.listen === listen)
    ?.script.exec.join('\n') ?? ''

t.test(
  'creators run first in their folder, deletes in a last Clean up folder, and links after the request that answers them',
  async (t) => {
    t.same(
      collection.item.map((f) => [f.name, f.item.map((i) => i.name)]),
      [
        ['Records', ['Create a record', 'List records', 'Get a record', 'Close a record', 'Read the history']],
        ['Attachments', ['Ask for an upload URL', 'Upload the bytes', 'Get an attachment']],
        ['Tokens', ['Create a token']],
        ['Clean up', ['Delete a record', 'Revoke a token']]
      ]
    )
  }
)

t.test('every request checks the lowest documented 2xx status, and a create stores the id it answered', async (t) => {
  t.equal(
    scriptOf('Create a record', 'test'),
    'pm.test("answers 201", function () {\n  pm.response.to.have.status(201);\n});\npm.collectionVariables.set("records.id", pm.response.json().id);'
  )
  t.equal(
    scriptOf('List records', 'test'),
    'pm.test("answers 200", function () {\n  pm.response.to.have.status(200);\n});'
  )
  t.match(scriptOf('Create a token', 'test'), 'pm.collectionVariables.set("tokens.id", pm.response.json().id);')
  t.equal(scriptOf('Get an attachment', 'test').includes('collectionVariables.set'), false, 'a GET stores nothing')
})

t.test(
  'the ids are used by path variables, colon segments, body properties and query parameters named after them',
  async (t) => {
    t.same(named('Get a record').request.url.variable, [{ key: 'id', value: '{{records.id}}' }])
    t.equal(named('Close a record').request.url.raw, '{{baseUrl}}/api/v1/records/{{records.id}}:close')
    t.equal(named('Revoke a token').request.url.variable?.[0].value, '{{tokens.id}}')
    t.same(
      JSON.parse(named('Ask for an upload URL').request.body?.raw ?? ''),
      { recordId: '{{records.id}}', size: 3 },
      'recordId of the example becomes the created record’s'
    )
    t.same(
      named('Read the history').request.url.query,
      [{ key: 'recordId', value: '{{records.id}}' }],
      'an optional recordId query parameter is sent, with the id'
    )
    t.same(
      named('Get an attachment').request.url.variable?.[0].value,
      '{{attachments.id}}',
      'the attachment’s own id, not the record’s'
    )
    t.same(named('Upload the bytes').request.url.variable, undefined)
    t.same(
      collection.variable.find((v) => v.key === 'records.id'),
      {
        key: 'records.id',
        value: 'rec-example',
        description: 'Set by “Create a record” when the collection runs (until then: the documented example).',
        type: 'string'
      }
    )
  }
)

t.test(
  'a signed link in a response is followed: its URL and headers are stored, and the request sends as many bytes as declared',
  async (t) => {
    t.match(
      scriptOf('Ask for an upload URL', 'test'),
      'pm.collectionVariables.set("attachments.upload.url", pm.response.json().upload.url);'
    )
    t.match(
      scriptOf('Ask for an upload URL', 'test'),
      'pm.collectionVariables.set("attachments.size", String(pm.response.json().size));'
    )
    const upload = named('Upload the bytes').request
    t.same(upload.url, { raw: '{{attachments.upload.url}}', host: ['{{attachments.upload.url}}'] })
    t.same(upload.header, [], 'no Content-Type of */*: the link’s headers are added before sending')
    t.match(
      scriptOf('Upload the bytes', 'prerequest'),
      'pm.request.body.update(\'0\'.repeat(Number(pm.collectionVariables.get("attachments.size"))));'
    )
    t.same(upload.auth, { type: 'noauth' })
  }
)

t.test(
  'the collection, folders and write requests say that running them writes to the tenant, and what the token request mints',
  async (t) => {
    t.match(
      collection.info.description,
      /^\*\*Running this collection writes to the tenant of your `token`\.\*\* In order, it sends “Create a record”, “Close a record”, “Ask for an upload URL”, “Upload the bytes”, “Create a token”, “Delete a record”, “Revoke a token”\./
    )
    t.match(
      collection.info.description,
      'It mints a live credential (“Create a token”); “Revoke a token” in “Clean up” revokes it, so none is left behind when the run completes.'
    )
    t.match(
      collection.item[0].description,
      'Running this folder writes to your tenant: “Create a record”, “Close a record”.'
    )
    t.match(
      named('Create a record').request.description,
      '**Writes to your tenant**: it creates one and keeps its `id` in `{{records.id}}` for the requests after it. “Delete a record” (in “Clean up”) deletes it at the end of a run.'
    )
    t.match(named('Create a token').request.description, 'it mints a live credential (the response’s `token`)')
    t.match(named('Delete a record').request.description, 'In the “Clean up” folder')
    t.equal(named('Get a record').request.description, undefined, 'a read says nothing of writes')
  }
)
