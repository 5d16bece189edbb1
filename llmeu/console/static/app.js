// The console shell: sign-in, the navigation, and a hash router.
//
// Routes live in the URL fragment (#/traces/trc_…), so the gateway serves one
// page, a trace can be linked to, and the browser's back button works. The
// fragment never holds the key. Each view is a module whose render(ctx, main,
// params) fills <main> and may return a cleanup function, called when the
// view is left (the playground uses it to stop a stream still running).
//
// Which pages and controls show is the gateway's to say: GET /v1/platform/me
// lists the sections the caller's roles may see and every platform route they
// may call, both derived from the gateway's access table. A page shows a
// control only when ctx.can(method, path) says its route is allowed, so the
// console never offers what the API would refuse; the API still checks.

import { api, ApiError, apiUrl, session } from "./api.js";
import { errorNote, fill, h } from "./dom.js";

const VIEWS = {
  playground: () => import("./playground.js"),
  usage: () => import("./usage.js"),
  traces: () => import("./traces.js"),
  trace: () => import("./trace.js"),
  routing: () => import("./routing.js"),
  policies: () => import("./policies.js"),
  keys: () => import("./keys.js"),
  teams: () => import("./teams.js"),
  users: () => import("./users.js"),
  compliance: () => import("./compliance.js"),
  exports: () => import("./exports.js"),
  verification: () => import("./verification.js"),
  events: () => import("./events.js"),
};
/** The section a view belongs to (a trace is part of Traces). */
const SECTION_OF = { trace: "traces" };

const main = document.getElementById("main");
let ctx = null;
let cleanup = null;
let firstRender = true;
let navigation = 0;
let methods = ["key"];

function parseHash() {
  const raw = location.hash.startsWith("#/") ? location.hash.slice(2) : "";
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query);
  if (parts[0] === "traces" && parts[1]) return { view: "trace", id: parts[1], params };
  if (parts[0] === "teams" && parts[1]) return { view: "teams", id: parts[1], params };
  const view = parts[0] in VIEWS ? parts[0] : ctx.me.sections[0];
  return { view, params };
}

/** Who the key is and what it may see; loaded once per sign-in. */
async function loadContext(key) {
  const me = await api("v1/platform/me", { key });
  const policies = await api("v1/platform/policies", { key });
  return {
    me,
    /** How far the caller reaches on a platform route ("all", "team", "own"); null: refused. */
    can: (method, path) => me.routes[`${method} ${path}`] ?? null,
    /** Whether the caller may create and revoke keys of `role`. */
    grants: (role) => me.grants.includes(role || "member"),
    policies: policies.data,
    defaultPolicy: policies.default_policy,
  };
}

function showSignIn(message) {
  ctx = null;
  navigation += 1;
  document.getElementById("nav").hidden = true;
  document.getElementById("who").hidden = true;
  const input = h("input", {
    id: "api-key",
    name: "api-key",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "api-key-hint",
  });
  const note = h("div", { className: "signin-note", "aria-live": "polite" }, message ? errorNote({ message }) : null);
  const withIssuer = methods.includes("oidc")
    ? h(
        "div",
        { className: "card signin" },
        h("h1", { id: "signin-org-title", tabIndex: -1 }, "Sign in"),
        h("a", { className: "button primary", href: "auth/login", id: "sign-in-org" }, "Sign in with your organisation"),
        methods.includes("key") ? null : note,
      )
    : null;
  if (!methods.includes("key")) {
    main.replaceChildren(withIssuer);
    return;
  }
  const form = h(
    "form",
    { className: "card signin", method: "post", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title", tabIndex: -1 }, "Sign in"),
    h("label", { htmlFor: "api-key" }, "API key"),
    input,
    h(
      "p",
      { id: "api-key-hint", className: "hint" },
      "The pages shown are those of the key's role: a key without one sees its own calls; the admin key sees everything. ",
      "The key is kept in this tab only (session storage) and sent only in the Authorization header.",
    ),
    h(
      "p",
      { className: "hint where-keys-come-from" },
      "Where a key comes from: the admin key is printed once by ",
      h("code", {}, "llmeu serve"),
      " at its first start (as ",
      h("code", {}, "export LLMEU_API_KEY=…"),
      ", or the value of ",
      h("code", {}, "LLMEU_ADMIN_KEY"),
      " if it was set; a lost one is replaced with ",
      h("code", {}, "llmeu keys reset-admin"),
      "). Tenant keys are made by the admin: ",
      h("code", {}, "llmeu keys create --name NAME"),
      " or the Keys page once signed in.",
    ),
    h("button", { type: "submit", className: "primary" }, "Sign in"),
    note,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    note.replaceChildren();
    try {
      ctx = await loadContext(key);
    } catch (error) {
      const text = error instanceof ApiError && error.status === 401 ? "That key was not accepted." : error.message;
      note.replaceChildren(errorNote({ message: text }));
      input.focus();
      return;
    }
    session.set(key);
    input.value = "";
    showShell();
    firstRender = false; // the form is gone: focus goes to the new page's heading
    route();
  });
  main.replaceChildren(...(withIssuer ? [withIssuer, form] : [form]));
  input.focus();
}

/** How the console may sign in, and the organisation's session if this browser has one. */
async function loadSignIn() {
  try {
    // The cookie is HttpOnly: only the gateway can say whether this browser holds one.
    const response = await fetch(apiUrl("auth/session"), { credentials: "same-origin", cache: "no-store" });
    const state = await response.json();
    methods = state.methods;
    if (state.signed_in && !session.key) session.useCookie(state.csrf_token);
  } catch {
    methods = ["key"]; // an older gateway: keys only
  }
}

function showShell() {
  document.getElementById("nav").hidden = false;
  for (const item of document.querySelectorAll("#nav [data-section]")) {
    item.hidden = !ctx.me.sections.includes(item.dataset.section);
  }
  document.getElementById("who").hidden = false;
  const { me } = ctx;
  fill(
    document.getElementById("who-name"),
    h("span", { className: "who-key" }, me.name || me.id),
    me.team_id ? ` · team ${me.team_id}` : null,
    ` · policy ${me.policy_id}`,
    me.roles.map((role) => h("span", { className: `badge role ${role === "admin" ? "admin" : ""}`, dataset: { role } }, role)),
  );
}

async function route() {
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  if (!session.signedIn) {
    showSignIn();
    return;
  }
  if (ctx === null) {
    try {
      ctx = await loadContext(session.key ?? undefined);
    } catch (error) {
      session.clear();
      showSignIn(error instanceof ApiError && error.status === 401 ? "Your key is no longer accepted." : error.message);
      return;
    }
    showShell();
  }
  let target = parseHash();
  let navName = SECTION_OF[target.view] ?? target.view;
  if (!ctx.me.sections.includes(navName)) {
    // A link to a page this role does not see: its first page instead.
    history.replaceState(null, "", `#/${ctx.me.sections[0]}`);
    target = parseHash();
    navName = target.view;
  }
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.route === navName) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  // Each navigation renders into an element of its own: a slower render of
  // an earlier navigation then fills a detached element, never the page.
  const generation = ++navigation;
  const view = h("div", { className: "view" });
  main.replaceChildren(view);
  main.setAttribute("aria-busy", "true");
  let done = null;
  try {
    // Policies change under the admin's hands: each page sees the current set.
    const [module, policies] = await Promise.all([VIEWS[target.view](), api("v1/platform/policies")]);
    ctx.policies = policies.data;
    ctx.defaultPolicy = policies.default_policy;
    done = await module.render(ctx, view, target);
  } catch (error) {
    if (generation !== navigation) return;
    if (error instanceof ApiError && error.status === 401) {
      session.clear();
      showSignIn("Your key is no longer accepted.");
      return;
    }
    view.replaceChildren(h("h1", { tabIndex: -1 }, "Something went wrong"), errorNote(error));
  }
  if (generation !== navigation) {
    if (typeof done === "function") done();
    return;
  }
  cleanup = typeof done === "function" ? done : null;
  main.removeAttribute("aria-busy");
  const title = view.querySelector("h1");
  document.title = title ? `${title.textContent} · llmeu console` : "llmeu console";
  // After a navigation, move focus to the new page's heading so a screen
  // reader announces it and the keyboard starts from the top of the view.
  if (!firstRender && title) title.focus();
  firstRender = false;
}

document.getElementById("sign-out").addEventListener("click", async () => {
  if (session.organisation) {
    const answer = await api("auth/logout", { method: "POST" }).catch(() => ({ logout_url: null }));
    session.clear();
    if (answer.logout_url) {
      location.assign(answer.logout_url); // the issuer's own sign-out, then back here
      return;
    }
  }
  session.clear();
  if (cleanup) cleanup();
  cleanup = null;
  history.replaceState(null, "", location.pathname);
  showSignIn();
});

document.getElementById("skip-link").addEventListener("click", (event) => {
  // The fragment is the router's: focus <main> without navigating.
  event.preventDefault();
  main.focus();
});

// A failure inside an event handler (Load more, Save, Revoke…) after the page
// rendered: a revoked key signs out; anything else is said where it is seen.
window.addEventListener("unhandledrejection", (event) => {
  event.preventDefault();
  const error = event.reason;
  if (error instanceof ApiError && error.status === 401) {
    session.clear();
    showSignIn("Your key is no longer accepted.");
    return;
  }
  (main.querySelector(".view") ?? main).append(errorNote(error));
});

window.addEventListener("hashchange", route);
loadSignIn().then(route);
