/**
 * Where attachment bytes live. Clients upload and download directly against the URLs a
 * driver signs; the API process only signs, checks and records. Keys look like
 * `<tenantId>/<recordId>/<attachmentId>` and never come from the client.
 */
export interface SignedRequest {
  method: 'PUT' | 'GET'
  url: string
  /** Headers the client must send exactly as given (they are part of the signature). */
  headers: Record<string, string>
  expiresAt: string
}

export interface UploadSpec {
  key: string
  contentType: string
  /** Exact size in bytes the upload must have. */
  size: number
  /** SHA-256 of the content, when the client declared one. */
  sha256?: Buffer
  expiresAt: Date
}

export interface DownloadSpec {
  key: string
  contentType: string
  /** For Content-Disposition: attachment; filename="…". */
  fileName: string
  expiresAt: Date
}

export interface StorageDriver {
  readonly name: 'local' | 's3'
  /** A URL the client PUTs the bytes to, with the headers it must send. */
  signUpload(spec: UploadSpec): Promise<SignedRequest>
  /** A short-lived URL the client GETs the bytes from. */
  signDownload(spec: DownloadSpec): Promise<SignedRequest>
  /** Size of a stored object, or undefined when there is none (not uploaded yet). */
  stat(key: string): Promise<{ size: number } | undefined>
  /** SHA-256 of a stored object, read from storage (used to verify a declared checksum). */
  sha256(key: string): Promise<Buffer>
  /** Stores a file the service produced itself (an export) under `key`, from a local path. */
  putFile(key: string, path: string, contentType: string): Promise<{ size: number }>
  /** Removes an object; no error when it does not exist. */
  delete(key: string): Promise<void>
  close?(): Promise<void>
}

/** Where an attachment's bytes live, in every driver. */
export const attachmentKey = (tenantId: string, recordId: string, attachmentId: string) =>
  `${tenantId}/${recordId}/${attachmentId}`
/**
 * Where one run of an export stores its file (the export's row names it, `file_key`): a key per
 * run, so a run another has fenced out never overwrites the file the export names.
 */
export const exportKey = (tenantId: string, runId: string) => `${tenantId}/exports/${runId}`
