// What other plugins use of the browser pages (the GraphQL console, the webhooks page): the
// router that mounts a feature's pages with the pages' headers and error pages, the session
// of the request, the frame around a page (who is signed in, the menu), escaped HTML, the
// way to send a visitor to sign in, and what a signed-in form needs (its body, the checks
// of its origin and CSRF token).
export { AssetSet, cssType, jsType, ownAsset, vendorAsset } from './assets.ts'
export { PageError } from './page-error.ts'
export { html, SafeHtml } from './html.ts'
export { layout, type PageFrame } from './layout.ts'
export { pageRouter } from './page-router.ts'
export {
  frameFor,
  postedForm,
  sendPage,
  seeOther,
  sessionOf,
  signedIn,
  type PageRequest,
  type PageRoute
} from './page-request.ts'
export { signInLocation } from './security.ts'
