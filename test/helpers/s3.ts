import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import S3rver from 's3rver'
import type { S3StorageConfig } from '../../core/storage/s3.ts'

export interface RunningS3 {
  /** `http://127.0.0.1:<port>`: path-style, the bucket is the first path segment. */
  endpoint: string
  bucket: string
  /** Ready for `createS3Driver` (or `attachments.s3` in the app config). */
  config: S3StorageConfig
  close(): Promise<void>
}

/**
 * A real S3-compatible server (s3rver, in-process) on a free loopback port, with one
 * empty bucket in its own temporary folder, removed on close.
 *
 * s3rver 3.7.1 checks a presigned URL's expiry and access key id, but does not compute
 * SigV4 signatures: a changed signature, key, content type or size is not refused by it
 * (real S3 refuses them all). Its only account is `S3RVER`/`S3RVER`.
 */
export async function startS3(bucket = 'records-test'): Promise<RunningS3> {
  const directory = await mkdtemp(join(tmpdir(), 'records-s3-'))
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket, configs: [] }]
  })
  let address
  try {
    address = await server.run()
  } catch (err) {
    await rm(directory, { recursive: true, force: true })
    throw err
  }
  const endpoint = `http://127.0.0.1:${address.port}`
  let closed = false
  return {
    endpoint,
    bucket,
    config: {
      endpoint,
      region: 'us-east-1',
      bucket,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      forcePathStyle: true,
      publicEndpoint: null
    },
    async close() {
      if (closed) return
      closed = true
      await server.close()
      await rm(directory, { recursive: true, force: true })
    }
  }
}
