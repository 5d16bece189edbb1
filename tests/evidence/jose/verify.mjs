// Verify an llmeu receipt with `jose`, an implementation independent of the gateway's.
// Usage: node verify.mjs JWKS_FILE RECEIPT_FILE
// Prints {"valid": true, "kid", "payload"} and exits 0, or {"valid": false, "error"} and 1.
import { compactVerify, createLocalJWKSet } from 'jose';
import { readFileSync } from 'node:fs';

const [jwksFile, receiptFile] = process.argv.slice(2);
const jwks = createLocalJWKSet(JSON.parse(readFileSync(jwksFile, 'utf8')));
const receipt = readFileSync(receiptFile, 'utf8').trim();
try {
  const { payload, protectedHeader } = await compactVerify(receipt, jwks, {
    algorithms: ['EdDSA'],
  });
  const claims = JSON.parse(new TextDecoder().decode(payload));
  console.log(JSON.stringify({ valid: true, kid: protectedHeader.kid, typ: protectedHeader.typ, payload: claims }));
} catch (error) {
  console.log(JSON.stringify({ valid: false, error: error.code ?? String(error) }));
  process.exit(1);
}
