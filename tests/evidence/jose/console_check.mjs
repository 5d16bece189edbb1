// Run the console's own receipt check (llmeu/console/static/receipt.js) in Node against a
// real gateway: Node has fetch and WebCrypto (Ed25519); the page's sessionStorage and
// document.baseURI are the only browser parts it needs, given here.
// Usage: node console_check.mjs GATEWAY_URL KEY TRACE_JSON  → prints the check as JSON.
const [gateway, key, traceJson] = process.argv.slice(2);
globalThis.sessionStorage = { getItem: () => key };
globalThis.document = { baseURI: `${gateway}/console` };
const { checkReceipt } = await import(new URL("../../../llmeu/console/static/receipt.js", import.meta.url));
const checked = await checkReceipt(JSON.parse(traceJson));
console.log(JSON.stringify({ state: checked.state, reason: checked.reason, kid: checked.kid }));
