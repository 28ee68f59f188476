import { callParams, withoutNulls, type GraphQLSchemaBuild, type Resolver } from '../../core/graphql/schema-part.ts'
import { attachmentsPath } from './attachments.shared.ts'

/**
 * The attachments part of the GraphQL schema (`Plugin.graphql`): a record's attachment gets
 * its download URL, and a mutation declares a file and returns its signed upload URL. Both
 * call the attachments service as REST does.
 */
export function attachmentsGraphQL({ sc, mutation, lookup }: GraphQLSchemaBuild) {
  // The records part lists a record's attachments; this part says how to fetch one.
  sc.getOrCreateOTC('Attachment').addFields({
    download: {
      type: 'SignedRequest!',
      description: 'A short-lived download URL (one `GET /api/v1/attachments/{id}` each: counted like it).',
      ...lookup,
      resolve: (async (a: { id: string }, _args, ctx) =>
        (await ctx.app.service(attachmentsPath).get(a.id, callParams(ctx))).download) as Resolver
    }
  })
  sc.createObjectTC({ name: 'HttpCall', fields: { method: 'String!', url: 'String!' } })
  sc.createObjectTC({
    name: 'AttachmentUpload',
    description: 'A pending attachment: PUT the file to `upload`, then call `complete`.',
    fields: {
      id: 'ID!',
      recordId: 'ID!',
      state: 'String!',
      fileName: 'String!',
      contentType: 'String!',
      size: 'Float!',
      sha256: 'String',
      createdAt: 'DateTime!',
      upload: 'SignedRequest!',
      complete: 'HttpCall!'
    }
  })
  sc.createInputTC({
    name: 'AttachmentUploadInput',
    fields: { recordId: 'ID!', fileName: 'String!', contentType: 'String!', size: 'Float!', sha256: 'String' }
  })
  mutation.requestAttachmentUpload = {
    type: 'AttachmentUpload',
    ...lookup,
    description: 'Declares a file of a record and returns its signed upload URL (POST /api/v1/attachments).',
    args: { input: 'AttachmentUploadInput!' },
    resolve: ((_s, { input }, ctx) =>
      ctx.app
        .service(attachmentsPath)
        .create(withoutNulls(input), callParams(ctx, { idempotencyKey: ctx.idempotencyKey }))) as Resolver
  }
}
