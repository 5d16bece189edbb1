// The platform API as the console calls it, with the signed-in key or the
// organisation's session.
//
// The key lives in sessionStorage: it survives a reload but not the tab, and
// it is only ever sent in the Authorization header, never in a URL (URLs end
// up in history, logs and Referer headers). Signed in with the organisation,
// there is no key: the gateway's HttpOnly session cookie goes with each call
// (the page never sees it), and every change carries the session's CSRF token
// in X-CSRF-Token. Paths are relative to the page, so a gateway served under
// a path prefix works unchanged.

const STORAGE_KEY = "llmeu.console.key";
let csrfToken = null;

export const session = {
  get key() {
    return sessionStorage.getItem(STORAGE_KEY);
  },
  /** Signed in with the organisation (a session cookie), not a key. */
  get organisation() {
    return csrfToken !== null;
  },
  get signedIn() {
    return this.key !== null || csrfToken !== null;
  },
  set(key) {
    sessionStorage.setItem(STORAGE_KEY, key);
  },
  useCookie(csrf) {
    csrfToken = csrf;
  },
  clear() {
    sessionStorage.removeItem(STORAGE_KEY);
    csrfToken = null;
  },
};

/** An error answered by the gateway, in OpenAI's shape. */
export class ApiError extends Error {
  constructor(status, body) {
    const error = body?.error ?? {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code ?? null;
    this.param = error.param ?? null;
    this.details = error.details ?? null;
    this.traceId = body?.llmeu?.trace_id ?? null;
  }
}

export function apiUrl(path, query = {}) {
  const url = new URL(path, document.baseURI);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  return url;
}

/** fetch with the key; `body` is sent as JSON. Resolves to the raw Response. */
export function send(path, { method = "GET", body, query, signal, key = session.key, headers: extra } = {}) {
  const headers = { accept: "application/json", ...extra };
  if (key) headers.authorization = `Bearer ${key}`;
  const withCookie = !key && csrfToken !== null;
  if (withCookie && method !== "GET") headers["x-csrf-token"] = csrfToken;
  if (body !== undefined) headers["content-type"] = "application/json";
  return fetch(apiUrl(path, query), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: "no-store",
    credentials: withCookie ? "same-origin" : "omit",
  });
}

export async function errorOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status says enough
  }
  return new ApiError(response.status, body);
}

/** A JSON call; throws ApiError on a non-2xx status. */
export async function api(path, options = {}) {
  const response = await send(path, options);
  if (!response.ok) throw await errorOf(response);
  return response.json();
}
