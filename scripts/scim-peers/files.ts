/** The suite files in `<PEER_SUITES_DIR>/scim/`, as the peer-suites folder names them. */
export const microsoftFile = 'ms-scim.postman_collection.json'
export const oktaFiles = { test: 'Okta-SCIM-20-SPEC-Test.json', initialScript: 'Initial_Script_Spec.txt' }
