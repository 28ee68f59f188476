import type { AppConfig } from '../config.ts'
import type { StorageDriver } from './driver.ts'
import { LocalStorage } from './local.ts'

/** The configured attachment store: local disk (the embedded default) or an S3-compatible service. */
export async function createStorage(
  config: AppConfig,
  secret: Buffer,
  publicUrl: () => string
): Promise<StorageDriver> {
  if (config.attachments.driver === 's3') {
    const { createS3Driver } = await import('./s3.ts')
    return createS3Driver(config.attachments.s3)
  }
  return new LocalStorage(config.attachments.local.dir, secret, publicUrl)
}
