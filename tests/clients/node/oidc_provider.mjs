// A real OpenID provider (the certified `oidc-provider` package) for the sign-in tests.
//
// node oidc_provider.mjs PORT REDIRECT_URI POST_LOGOUT_URI
//
// One confidential client, `llmeu-console` (secret `console-secret`), PKCE required;
// two users in different groups (claim `groups`): `alice` (auditors) and `bob`
// (operators), any password; the package's development login and consent forms.
// Prints `ready` once it listens.
import Provider from "oidc-provider";

const [port, redirectUri, postLogoutUri] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const accounts = {
  alice: { sub: "alice", email: "alice@example.org", name: "Alice Auditor", groups: ["auditors"] },
  bob: { sub: "bob", email: "bob@example.org", name: "Bob Operator", groups: ["operators", "staff"] },
  carol: { sub: "carol", email: "carol@example.org", name: "Carol", groups: ["staff"] },
};

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "llmeu-console",
      client_secret: "console-secret",
      redirect_uris: [redirectUri],
      post_logout_redirect_uris: [postLogoutUri],
      response_types: ["code"],
      grant_types: ["authorization_code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  pkce: { required: () => true },
  claims: { openid: ["sub"], email: ["email"], profile: ["name", "groups"] },
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return { accountId: id, async claims() { return account; } };
  },
});
provider.proxy = false;
provider.listen(Number(port), "127.0.0.1", () => console.log("ready"));
