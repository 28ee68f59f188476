import { headValueMax, operation, pathParam, type DocContext, type Fragment } from '../../core/openapi/builder.ts'

const tag = 'API description'

export function describeApiDocs(_ctx: DocContext): Fragment {
  return {
    tags: [{ name: tag, description: 'This document, the interactive reference and the Postman collection.' }],
    paths: {
      '/api/docs/spec.json': {
        get: operation({
          operationId: 'getOpenApiDocument',
          tag,
          summary: 'The OpenAPI 3.1 document',
          description:
            'Without a credential: the generic document. With a bearer token or a signed-in session: the document of its tenant, typing the payload, states and transitions of every module the credential has a role in. Send `If-None-Match` with the `ETag` to get 304 while nothing changed.',
          scope: '',
          optionalAuth: true,
          parameters: [
            {
              name: 'If-None-Match',
              in: 'header',
              required: false,
              description: 'The `ETag` of a copy you hold.',
              schema: { type: 'string', maxLength: headValueMax }
            }
          ],
          responses: {
            200: {
              description: 'The document.',
              schema: {
                type: 'object',
                required: ['openapi', 'info', 'paths'],
                properties: {
                  openapi: { type: 'string', const: '3.1.0' },
                  info: { type: 'object' },
                  paths: { type: 'object' }
                }
              },
              headers: ['ETag', 'Cache-Control']
            },
            304: { description: 'Your copy is current.', headers: ['ETag'] }
          }
        })
      },
      '/api/docs/postman.json': {
        get: operation({
          operationId: 'getPostmanCollection',
          tag,
          summary: 'A Postman collection of this document',
          description:
            "Postman Collection v2.1, generated from the same document (the caller's tenant when authenticated). Set the `token` variable to a bearer token.",
          scope: '',
          optionalAuth: true,
          responses: {
            200: {
              description: 'The collection, as a download.',
              schema: {
                type: 'object',
                required: ['info', 'item'],
                properties: { info: { type: 'object' }, item: { type: 'array', items: { type: 'object' } } }
              },
              headers: ['Content-Disposition', 'Cache-Control']
            }
          }
        })
      },
      '/api/docs/assets/{file}': {
        get: operation({
          operationId: 'getApiReferenceAsset',
          tag,
          summary: 'A file of the reference page',
          description:
            "Swagger UI's files from its npm package, and the page's own start-up script. Cached for a day; the page links them with a version query.",
          scope: null,
          parameters: [
            pathParam('file', 'The file name.', {
              type: 'string',
              enum: [
                'swagger-ui.css',
                'swagger-ui-bundle.js',
                'swagger-ui-standalone-preset.js',
                'favicon-32x32.png',
                'favicon-16x16.png',
                'init.js'
              ]
            })
          ],
          responses: {
            200: {
              description: 'The file.',
              schema: { type: 'string' },
              contentType: 'text/javascript',
              alternatives: ['text/css', 'image/png'],
              headers: ['ETag', 'Cache-Control']
            },
            304: { description: 'Your copy is current.', headers: ['ETag', 'Cache-Control'] }
          },
          problems: [404]
        })
      },
      '/api/docs': {
        get: operation({
          operationId: 'getApiReference',
          tag,
          summary: 'Interactive API reference',
          description:
            "Swagger UI over this document; sign in (`/sign-in`) or authorize with a bearer token to see your tenant's modules.",
          scope: null,
          responses: { 200: { description: 'An HTML page.', schema: { type: 'string' }, contentType: 'text/html' } }
        })
      }
    }
  }
}
