// A trace's signed receipt: fetched from the platform API, checked in the browser
// against the keys the gateway publishes (Web Crypto, Ed25519), offered for download.
// The check here is a convenience; `llmeu receipt verify` or any JOSE library is the
// one an auditor runs (docs/evidence.md).

import { api, apiUrl } from "./api.js";

const decoder = new TextDecoder();

function fromBase64Url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=");
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

/** {receipt, kid, state: "valid" | "invalid" | "unchecked", reason} for a final trace. */
export async function checkReceipt(trace) {
  const { receipt } = await api(`v1/platform/traces/${encodeURIComponent(trace.id)}/receipt`);
  const [header64, payload64, signature64] = receipt.split(".");
  const header = JSON.parse(decoder.decode(fromBase64Url(header64)));
  const payload = JSON.parse(decoder.decode(fromBase64Url(payload64)));
  const result = { receipt, kid: header.kid, payload };
  const response = await fetch(apiUrl(".well-known/llmeu/jwks.json"), { cache: "no-store", credentials: "omit" });
  const jwk = (await response.json()).keys.find((k) => k.kid === header.kid);
  if (!jwk) return { ...result, state: "invalid", reason: `no published key has kid ${header.kid}` };
  let key;
  try {
    key = await crypto.subtle.importKey("jwk", { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
  } catch {
    return { ...result, state: "unchecked", reason: "this browser cannot check Ed25519 signatures" };
  }
  const signed = new TextEncoder().encode(`${header64}.${payload64}`);
  const valid = await crypto.subtle.verify({ name: "Ed25519" }, key, fromBase64Url(signature64), signed);
  if (!valid) return { ...result, state: "invalid", reason: "the signature does not verify" };
  if (payload.trace_id !== trace.id || payload.status !== trace.status) {
    return { ...result, state: "invalid", reason: "the receipt speaks of another call" };
  }
  return { ...result, state: "valid", reason: `signed by key ${header.kid}` };
}

/** A link that saves the receipt as `<trace id>.jws`. */
export function downloadHref(receipt) {
  return URL.createObjectURL(new Blob([`${receipt}\n`], { type: "application/jose" }));
}
