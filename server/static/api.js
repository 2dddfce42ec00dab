// The REST side of taskwire's public API, as the page uses it. The session API key (when the
// server has keys) goes in the X-Session-API-Key header, never in a URL.

export class ApiError extends Error {
  constructor(status, detail, code) {
    super(detail);
    this.status = status;
    this.code = code;
  }
}

export class Api {
  constructor(base = window.location.origin) {
    this.base = base;
    /** The session API key, or null when the server needs none. */
    this.key = null;
  }

  async request(method, path, { params, body } = {}) {
    const url = new URL(path, this.base);
    for (const [name, value] of Object.entries(params ?? {})) {
      if (value != null) url.searchParams.set(name, value);
    }
    const headers = {};
    if (this.key) headers["X-Session-API-Key"] = this.key;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (err) {
      throw new ApiError(0, `cannot reach the server (${err.message})`, "unreachable");
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = { detail: text };
    }
    if (!response.ok) {
      throw new ApiError(response.status, data?.detail || response.statusText, data?.code || "http_error");
    }
    return data;
  }

  get(path, params) {
    return this.request("GET", path, { params });
  }

  post(path, body) {
    return this.request("POST", path, { body });
  }

  /** The ws:// (or wss://) URL of a socket path on this server. */
  socketUrl(path, params = {}) {
    const url = new URL(path, this.base);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    for (const [name, value] of Object.entries(params)) {
      if (value != null) url.searchParams.set(name, value);
    }
    return url.toString();
  }
}
