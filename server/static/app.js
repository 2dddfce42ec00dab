// The taskwire viewer: lists conversations, starts new ones (the scripted demo or a prompt)
// and shows one live. A client of the public API only: REST and the event WebSocket.

import { Api } from "./api.js";
import { ConversationView } from "./conversation.js";
import { ago, h, shortId, statusLabel } from "./dom.js";

const KEY_STORAGE = "taskwire.session_api_key";
const LIST_REFRESH_MS = 15000;
/** Seconds each model turn of a demo waits: slow enough to watch the sub-agents work. */
const DEMO_PACE_S = 0.6;

const $ = (id) => document.getElementById(id);

/** The demo scenario a scripted conversation runs: its script file's name; "" for anything else. */
function scenarioName(script) {
  if (typeof script !== "string") return "";
  return script.endsWith(".yaml") && !script.includes("\n") ? script.split("/").pop().replace(/\.yaml$/, "") : "";
}

class App {
  constructor() {
    this.api = new Api();
    this.info = null;
    this.view = null;
    this.scenarios = [];
  }

  async start() {
    try {
      this.info = await this.api.get("/server_info");
    } catch (err) {
      $("server-info").textContent = `Cannot reach the server: ${err.message}`;
      return;
    }
    const info = this.info;
    $("server-info").textContent = `v${info.version} · LLM ${info.llm_api} · sub-agent forwarding `
      + `${info.forward_subagent_events ? "on" : "off"}${info.auth_required ? " · auth" : ""}`;
    if (info.auth_required) await this.authenticate();
    this.wireForms();
    await Promise.all([this.loadDemo(), this.loadConversations()]);
    window.addEventListener("hashchange", () => this.route());
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.view?.timeline.followed) this.view.follow(null);
    });
    setInterval(() => document.visibilityState === "visible" && this.loadConversations(), LIST_REFRESH_MS);
    this.route();
  }

  // -- auth -----------------------------------------------------------------------------

  async authenticate(problem) {
    this.api.key = problem ? null : sessionStorage.getItem(KEY_STORAGE);
    if (this.api.key && (await this.keyWorks())) return;
    sessionStorage.removeItem(KEY_STORAGE);
    await this.askKey(problem);
  }

  async keyWorks() {
    try {
      await this.api.get("/api/conversations/count");
      return true;
    } catch (err) {
      if (err.status === 401) return false;
      throw err;
    }
  }

  /** Ask for a key until one works. */
  askKey(problem) {
    const dialog = $("auth-dialog");
    const error = $("auth-error");
    error.hidden = !problem;
    error.textContent = problem ?? "";
    return new Promise((resolve) => {
      dialog.oncancel = (e) => e.preventDefault(); // Escape must not dismiss it: nothing works without a key
      $("auth-form").onsubmit = async (e) => {
        e.preventDefault();
        this.api.key = $("api-key").value.trim();
        if (await this.keyWorks()) {
          sessionStorage.setItem(KEY_STORAGE, this.api.key);
          $("api-key").value = "";
          dialog.close();
          resolve();
        } else {
          error.hidden = false;
          error.textContent = "That key was refused.";
        }
      };
      if (!dialog.open) dialog.showModal();
      $("api-key").focus();
    });
  }

  // -- starting conversations -----------------------------------------------------------

  wireForms() {
    $("demo-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const scenario = this.scenarios.find((s) => s.name === $("demo-scenario").value);
      if (scenario) this.create(scenario.request);
    });
    $("demo-scenario").addEventListener("change", () => this.describeScenario());
    const prompt = $("prompt");
    $("prompt-form").addEventListener("submit", (e) => {
      e.preventDefault();
      if (prompt.value.trim()) this.create({ initial_message: prompt.value.trim() }).then((ok) => ok && (prompt.value = ""));
    });
    prompt.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("prompt-form").requestSubmit();
    });
    $("refresh-list").addEventListener("click", () => this.loadConversations());
  }

  async loadDemo() {
    const demo = await this.api.get("/api/demo", { pace: DEMO_PACE_S }).catch(() => ({ scenarios: [] }));
    this.scenarios = demo.scenarios ?? [];
    $("demo-form").hidden = !this.scenarios.length;
    $("demo-scenario").replaceChildren(...this.scenarios.map((s) => h("option", { value: s.name, text: s.name.replace(/_/g, " ") })));
    if (demo.default) $("demo-scenario").value = demo.default;
    this.describeScenario();
  }

  describeScenario() {
    const scenario = this.scenarios.find((s) => s.name === $("demo-scenario").value);
    $("demo-description").textContent = scenario?.description ?? "";
  }

  async create(body) {
    const error = $("start-error");
    error.hidden = true;
    try {
      const info = await this.api.post("/api/conversations", body);
      window.location.hash = `#/c/${info.id}`;
      this.loadConversations();
      return true;
    } catch (err) {
      error.hidden = false;
      error.textContent = `Could not start: ${err.message}`;
      return false;
    }
  }

  // -- the list -------------------------------------------------------------------------

  async loadConversations() {
    let page;
    try {
      page = await this.api.get("/api/conversations/search", { limit: 50 });
    } catch {
      return; // keep the list as it is; the next refresh tries again
    }
    $("conversations").replaceChildren(...page.items.map((c) => this.listItem(c)));
    this.markCurrent();
  }

  listItem(c) {
    const scenario = scenarioName(c.agent?.llm?.script);
    const label = c.title || (scenario ? `demo: ${scenario.replace(/_/g, " ")}` : "Conversation");
    return h("li", {},
      h("a", { href: `#/c/${c.id}`, dataset: { id: c.id } },
        h("span", { class: "title", text: label }),
        h("span", { class: "badge", dataset: { status: statusLabel(c.status) }, text: statusLabel(c.status) }),
        h("span", { class: "muted small", text: `${shortId(c.id)} · ${ago(c.created_at)}` })));
  }

  markCurrent() {
    for (const a of $("conversations").querySelectorAll("a")) {
      if (a.dataset.id === this.view?.id) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }

  onStatus(id, status) {
    // Only the badge: the list itself refreshes on its own schedule.
    const badge = $("conversations").querySelector(`a[data-id="${CSS.escape(id)}"] .badge`);
    if (badge) {
      badge.textContent = statusLabel(status);
      badge.dataset.status = statusLabel(status);
    }
  }

  // -- the open conversation ------------------------------------------------------------

  route() {
    const match = window.location.hash.match(/^#\/c\/([\w-]+)$/);
    this.open(match ? match[1] : null);
  }

  open(id, { force = false } = {}) {
    if (!force && this.view?.id === id) return;
    this.view?.stop();
    this.view = null;
    if (!id) {
      this.markCurrent();
      return;
    }
    this.view = new ConversationView(this.api, id, {
      forwarding: this.info.forward_subagent_events,
      onStatus: (cid, status) => this.onStatus(cid, status),
      onUnauthorized: async () => {
        await this.authenticate("The server refused the key.");
        this.open(id, { force: true });
      },
    });
    $("main").replaceChildren(this.view.el);
    this.view.start();
    this.markCurrent();
  }
}

const app = new App();

/** For tests and benchmarks: what the page has taken in, and a way to drop its connection. */
window.__taskwire = {
  app,
  get view() {
    return app.view;
  },
  /** Resolves with {openedAt, renderedAt, events} once `seq` is on screen. */
  rendered: (seq) => app.view.rendered(seq),
  seqs: () => (app.view ? [...app.view.seqs] : []),
  connects: () => app.view?.socket.connects ?? 0,
  drop: () => app.view?.socket.drop(),
};

app.start();
