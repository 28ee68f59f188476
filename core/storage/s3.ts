import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { attachmentDisposition } from './disposition.ts'
import type { DownloadSpec, SignedRequest, StorageDriver, UploadSpec } from './driver.ts'

export interface S3StorageConfig {
  /** Where this service reaches S3; null for AWS itself (derived from the region). */
  endpoint: string | null
  region: string
  bucket: string
  /** Both set, or both null for the SDK's default credential chain (environment, profile, instance role…). */
  accessKeyId: string | null
  secretAccessKey: string | null
  /** Path-style URLs (`endpoint/bucket/key`), as MinIO and most self-hosted services need. */
  forcePathStyle: boolean
  /** Where clients reach S3, when that differs from `endpoint` (e.g. a container name inside, a host name outside). */
  publicEndpoint?: string | null
}

/** SigV4 presigned URLs cannot outlive a week. */
const maxUrlSeconds = 7 * 24 * 3600

/** An S3-compatible store: the service signs URLs, clients move the bytes directly to and from the bucket. */
export function createS3Driver(config: S3StorageConfig): StorageDriver {
  const { bucket } = config
  const client = new S3Client(clientConfig(config, config.endpoint))
  // Presigning is computed locally, so a second client only changes the host the URLs name.
  const signer = config.publicEndpoint ? new S3Client(clientConfig(config, config.publicEndpoint)) : client

  /** Seconds from the signing instant (whole seconds, as X-Amz-Date has) to the wanted expiry. */
  function validity(expiresAt: Date) {
    const signedAt = Math.floor(Date.now() / 1000)
    const seconds = Math.min(maxUrlSeconds, Math.max(1, Math.floor(expiresAt.getTime() / 1000) - signedAt))
    return {
      signingDate: new Date(signedAt * 1000),
      expiresIn: seconds,
      expiresAt: new Date((signedAt + seconds) * 1000).toISOString()
    }
  }

  return {
    name: 's3',

    async signUpload(spec: UploadSpec): Promise<SignedRequest> {
      const w = validity(spec.expiresAt)
      const command = new PutObjectCommand({
        Bucket: bucket,
        Key: spec.key,
        ContentType: spec.contentType,
        ContentLength: spec.size,
        // Signed into the query string, where real S3 ignores it (it checks a checksum only when
        // sent as a signed `x-amz-checksum-sha256` header) and s3rver ignores checksums altogether.
        // So the client is not asked to send it: the platform checks the stored object with
        // `sha256(key)` after the upload. To make S3 refuse other bytes itself, add the header to
        // `unhoistableHeaders` below and to the returned headers.
        ChecksumSHA256: spec.sha256?.toString('base64')
      })
      const url = await getSignedUrl(signer, command, {
        expiresIn: w.expiresIn,
        signingDate: w.signingDate,
        // Content-Length is signed as well: HTTP clients send it from the body, so it is not in
        // the headers below, but a body of another size breaks the signature on real S3
        // (a chunked upload without Content-Length does too).
        signableHeaders: new Set(['content-type', 'content-length'])
      })
      return { method: 'PUT', url, headers: { 'content-type': spec.contentType }, expiresAt: w.expiresAt }
    },

    async signDownload(spec: DownloadSpec): Promise<SignedRequest> {
      const w = validity(spec.expiresAt)
      const command = new GetObjectCommand({
        Bucket: bucket,
        Key: spec.key,
        ResponseContentDisposition: attachmentDisposition(spec.fileName),
        ResponseContentType: spec.contentType
      })
      const url = await getSignedUrl(signer, command, { expiresIn: w.expiresIn, signingDate: w.signingDate })
      return { method: 'GET', url, headers: {}, expiresAt: w.expiresAt }
    },

    async stat(key: string) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
        return { size: head.ContentLength ?? 0 }
      } catch (err) {
        // S3 answers 403, not 404, for a missing key when the credentials lack s3:ListBucket: grant
        // it, since a 403 is not taken for "not uploaded yet".
        if (isNotFound(err)) return undefined
        throw err
      }
    },

    async sha256(key: string) {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
      if (!object.Body) throw new Error(`S3 returned no body for ${key}`)
      const hash = createHash('sha256')
      // In Node the body is a readable stream: hash it chunk by chunk, never the whole object in memory.
      for await (const chunk of object.Body as AsyncIterable<Uint8Array>) hash.update(chunk)
      return hash.digest()
    },

    async putFile(key: string, path: string, contentType: string) {
      const { size } = await stat(path)
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: createReadStream(path),
          ContentLength: size,
          ContentType: contentType
        })
      )
      return { size }
    },

    async delete(key: string) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))
      } catch (err) {
        // S3 itself answers 204 for a missing key; some compatible services answer 404.
        if (!isNotFound(err)) throw err
      }
    },

    async close() {
      client.destroy()
      if (signer !== client) signer.destroy()
    }
  }
}

function clientConfig(config: S3StorageConfig, endpoint: string | null): S3ClientConfig {
  const { accessKeyId, secretAccessKey } = config
  if ((accessKeyId === null) !== (secretAccessKey === null)) {
    throw new Error(
      'attachments.s3: set both accessKeyId and secretAccessKey, or neither (for the default credential chain)'
    )
  }
  return {
    region: config.region,
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: config.forcePathStyle,
    ...(accessKeyId !== null && secretAccessKey !== null ? { credentials: { accessKeyId, secretAccessKey } } : {}),
    // By default the SDK signs a CRC32 of the (still empty) body into every presigned PUT and asks
    // for checksum mode on GETs; checksums are handled explicitly here instead.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED'
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } }
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404
}
