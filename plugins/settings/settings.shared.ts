// What other plugins use of the browser pages (the GraphQL console, the webhooks page): the
// router that mounts a feature's pages with the pages' headers and error pages, the session
// of the request, the frame around a page (who is signed in, the menu), escaped HTML, the
// way to send a visitor to sign in, and what a signed-in form needs (its body, the checks
// of its origin and CSRF token).
export { readForm } from './form-body.ts'
export { html, SafeHtml } from './html.ts'
export { layout, type PageFrame } from './layout.ts'
export { pageRouter } from './page-router.ts'
export { frameFor, sendPage, seeOther, sessionOf, type PageRequest, type PageRoute } from './page-request.ts'
export { assertCsrf, assertSameOrigin, signInLocation } from './security.ts'
