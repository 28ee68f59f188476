/**
 * A refusal rendered as an HTML page (these routes serve people, not API clients, so
 * they do not answer with problem+json). `message` is shown as text, escaped.
 */
export class PageError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
    readonly headers: Record<string, string> = {}
  ) {
    super(message)
  }
}
