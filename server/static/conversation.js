// One conversation, live: a header (status, usage, connection, follow filter), the timeline,
// and a message box. Events are queued as they arrive and taken in a frame at a time, within
// a time budget, so thousands of them never freeze the page.

import { ApiError } from "./api.js";
import { clip, costText, h, shortId, statusLabel, usageText } from "./dom.js";
import { CloseCode, LiveSocket } from "./live.js";
import { PermissionDesk } from "./permissions.js";
import { Timeline } from "./timeline.js";

const RUN_ENDS = new Set(["finished", "error", "paused"]);
const FRAME_BUDGET_MS = 12;
const CATCH_UP_BUDGET_MS = 25;
const CATCH_UP_EVERY_MS = 100;
const REFRESH_MS = 1500;
const REASON_LIMIT = 200;

export class ConversationView {
  /**
   * @param {import("./api.js").Api} api
   * @param {string} id
   * @param {{forwarding: boolean, onStatus: Function, onUnauthorized: Function}} options
   */
  constructor(api, id, options) {
    this.api = api;
    this.id = id;
    this.options = options;
    this.status = null;
    this.errorReason = null;
    this.statusReason = null;
    /** The seq of every stored event taken in, in order: what the page shows, once each. */
    this.seqs = [];
    this._queue = [];
    this._head = 0;
    this._waiters = [];
    this._refreshTimer = null;
    this._refreshing = false;
    this._refreshAgain = false;
    this._cardsChanged = false;
    /** How many drains took events in, and the script time they took (for measurement). */
    this.stats = { drains: 0, busyMs: 0 };
    /** The log's end as the socket (re)opened: until it is reached, the replay is catching up. */
    this._catchUpTo = 0;
    this._frame = false;
    this._timer = null;

    this.timeline = new Timeline({
      onCancel: (card) => this.cancel(card),
      onReply: (card, text) => this.reply(card, text),
      onFollow: (subagentId) => this.follow(subagentId),
      onCardAdded: () => { this._cardsChanged = true; },
      onAnswer: (box, option) => this.desk.answer(box, option),
    });
    this.el = this.build();
    /** The tree's permission requests: the waiting marks, and answering from the page. */
    this.desk = new PermissionDesk(api, id, this.timeline, this.waitingEl);
    this.socket = new LiveSocket(api, id, {
      onFullState: (state) => {
        this._catchUpTo = state.last_seq ?? 0;
        this.enqueue({ fullState: state });
      },
      onEvent: (event) => this.enqueue(event),
      onState: (state, detail) => this.showConnection(state, detail),
      onFatal: (code, reason) => this.fatal(code, reason),
    });
  }

  build() {
    this.statusEl = h("span", { class: "badge", text: "…" });
    this.usageEl = h("span", { class: "usage" });
    this.treeUsageEl = h("span", { class: "tree-usage", hidden: true });
    this.countEl = h("span", { class: "muted" });
    this.connectionEl = h("span", { class: "connection", role: "status", text: "connecting…" });
    this.waitingEl = h("span", { class: "waiting-badge", role: "status", hidden: true });
    // Why a run ended in error (the main agent's last AgentErrorEvent), beside the badge.
    this.reasonEl = h("span", { class: "reason", role: "status", hidden: true });
    this.followEl = h("select", { id: "follow", onchange: () => this.follow(this.followEl.value || null) },
      h("option", { value: "", text: "Everything" }));
    this.stopEl = h("button", { type: "button", class: "stop", hidden: true, text: "Stop", onclick: () => this.interrupt() });
    this.noticeEl = h("p", { class: "notice", hidden: true });
    this.scroller = h("div", { class: "scroller", tabindex: "0", "aria-label": "conversation events" }, this.timeline.el);
    this.inputEl = h("textarea", { id: "message", rows: "2", placeholder: "Send a message (Ctrl+Enter)" });
    this.inputEl.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.send();
      }
    });
    return h("section", { class: "conversation", "aria-label": "conversation" },
      h("header", { class: "conversation-head" },
        h("h2", {}, "Conversation ", h("code", { text: shortId(this.id), title: this.id })),
        this.statusEl, this.reasonEl, this.waitingEl, this.usageEl, this.treeUsageEl, this.countEl, this.connectionEl,
        h("span", { class: "spacer" }),
        h("label", { for: "follow", text: "Follow" }), this.followEl, this.stopEl),
      this.noticeEl,
      this.scroller,
      h("form", { class: "composer", onsubmit: (e) => { e.preventDefault(); this.send(); } },
        h("label", { for: "message", class: "visually-hidden", text: "Message" }), this.inputEl,
        h("button", { type: "submit", text: "Send" })));
  }

  start() {
    if (!this.options.forwarding) {
      this.notice("This server does not forward sub-agent events (OH_FORWARD_SUBAGENT_EVENTS is off): "
        + "sub-agent cards show their status and usage, not their steps.");
    }
    this.socket.start();
  }

  stop() {
    this.socket.stop();
    clearTimeout(this._refreshTimer);
    clearTimeout(this._timer);
    for (const waiter of this._waiters) waiter.reject(new Error("view closed"));
    this._waiters = [];
  }

  // -- taking events in -----------------------------------------------------------------

  enqueue(item) {
    this._queue.push(item);
    this.schedule();
  }

  /** Plan the next drain: the next frame when live. While the replay catches up (the socket
   * is short of the log's end that full_state announced), a few times a second: every frame
   * that changes the page pays for style, layout and paint, and the socket's frames wait. */
  schedule() {
    const catchingUp = this.socket.lastSeq < this._catchUpTo;
    if (this._frame || (this._timer && catchingUp)) return;
    clearTimeout(this._timer);
    this._timer = null;
    if (catchingUp) {
      this._timer = setTimeout(() => {
        this._timer = null;
        this.requestFrame();
      }, CATCH_UP_EVERY_MS);
    } else {
      this.requestFrame();
    }
  }

  requestFrame() {
    if (this._frame) return;
    this._frame = true;
    const run = () => {
      this._frame = false;
      this.drain();
    };
    // Hidden tabs get no animation frames: take events in anyway.
    if (document.visibilityState === "hidden") setTimeout(run, 50);
    else requestAnimationFrame(run);
  }

  drain() {
    const stick = this.nearBottom();
    const start = performance.now();
    const budget = this.socket.lastSeq < this._catchUpTo ? CATCH_UP_BUDGET_MS : FRAME_BUDGET_MS;
    const queue = this._queue;
    let i = this._head;
    while (i < queue.length) {
      this.take(queue[i++]);
      if ((i & 31) === 0 && performance.now() - start > budget) break;
    }
    if (i >= queue.length) {
      this._queue = [];
      this._head = 0;
    } else {
      this._head = i;
      this.schedule();
    }
    if (this._cardsChanged) this.refreshFollowOptions();
    this.countEl.textContent = `${this.seqs.length} events`;
    if (stick) this.scroller.scrollTop = this.scroller.scrollHeight;
    this.stats.drains += 1;
    this.stats.busyMs += performance.now() - start;
    this.settleWaiters();
  }

  take(item) {
    if (item.fullState) {
      const state = item.fullState;
      this.statusReason = state.status_reason ?? null;
      this.setStatus(state.status);
      this.showReason();
      if (state.usage) this.usageEl.textContent = usageText(state.usage);
      if (state.tree_usage) this.showTreeUsage(state.tree_usage);
      this.timeline.applySubagents(state.subagents);
      this.desk.apply(state.pending_permissions ?? [], false); // absent: the tree never asked
      return;
    }
    this.timeline.apply(item);
    if (item.seq != null) this.seqs.push(item.seq);
    if (item.kind === "ConversationStateUpdateEvent") {
      if (item.key === "status" && item.subagent_id == null) {
        this.statusReason = item.reason ?? null;
        this.setStatus(item.value);
        this.showReason();
      }
      if (item.key === "usage") this.applyUsage(item.subagent_id, item.value);
      if (item.key === "tree_usage" && item.subagent_id == null) this.showTreeUsage(item.value);
      if (item.key === "work_state" && item.subagent_id) this.timeline.cards.get(item.subagent_id)?.update({ work_state: item.value });
      if (item.key === "pending_permissions" && item.subagent_id == null) this.desk.apply(item.value ?? []);
    }
    if (item.kind === "AgentErrorEvent" && item.subagent_id == null) {
      this.errorReason = item.error;
      this.showReason();
    }
    // With forwarding off, sub-agents' events never arrive: ask for their cards now and then.
    if (!this.options.forwarding && item.seq != null && this.status === "running") this.refreshSoon();
  }

  nearBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 48;
  }

  // -- status, usage, tree --------------------------------------------------------------

  setStatus(status) {
    if (!status || status === this.status) return;
    const previous = this.status;
    this.status = status;
    this.statusEl.textContent = statusLabel(status);
    this.statusEl.dataset.status = statusLabel(status);
    this.stopEl.hidden = status !== "running";
    if (status === "running") this.errorReason = null; // a new run: the last one's reason is stale
    this.showReason();
    if (previous !== null && RUN_ENDS.has(status)) {
      this.refreshSoon(0);
    }
    this.options.onStatus?.(this.id, status);
  }

  showReason() {
    // An error's message; or why a run was paused when neither it nor a person chose it (a
    // budget passed, the store stopped it): the status event's reason.
    const reason = this.status === "error" ? this.errorReason : this.status === "paused" ? this.statusReason : null;
    const shown = Boolean(reason);
    this.reasonEl.hidden = !shown;
    this.reasonEl.textContent = shown ? clip(reason, REASON_LIMIT) : "";
    this.reasonEl.title = shown ? reason : "";
  }

  /** A `usage` event: the conversation's (no sub-agent id) or one sub-agent's total so far. */
  applyUsage(subagentId, usage) {
    if (subagentId == null) {
      this.usageEl.textContent = usageText(usage);
      return;
    }
    this.timeline.cards.get(subagentId)?.update({ usage });
    this.timeline.refreshSubtrees(subagentId);
  }

  /** The tree's total (the root and every sub-agent), beside the root's own usage. */
  showTreeUsage(total) {
    this.treeUsageEl.hidden = !total?.llm_calls;
    this.treeUsageEl.textContent = total?.llm_calls ? `tree: ${total.llm_calls} calls${costText(total)}` : "";
  }

  /** Ask for the conversation and its sub-agent tree once the run ends (and, with forwarding
   * off, now and then while it runs, since sub-agents' events do not come). */
  refreshSoon(delay = REFRESH_MS) {
    if (this._refreshing) {
      this._refreshAgain ||= delay === 0;
      return;
    }
    if (this._refreshTimer) {
      if (delay > 0) return;
      clearTimeout(this._refreshTimer);
    }
    this._refreshTimer = setTimeout(() => this.refresh(), delay);
  }

  async refresh() {
    this._refreshTimer = null;
    this._refreshing = true;
    try {
      const [info, tree] = await Promise.all([
        this.api.get(`/api/conversations/${this.id}`),
        this.api.get(`/api/conversations/${this.id}/subagents`),
      ]);
      this.usageEl.textContent = usageText(info.usage);
      this.timeline.applySubagents(tree);
      if (this._cardsChanged) this.refreshFollowOptions();
    } catch {
      // the header keeps its last figures; the next event asks again
    } finally {
      this._refreshing = false;
      if (this._refreshAgain) {
        this._refreshAgain = false;
        this.refreshSoon(0);
      }
    }
  }

  refreshFollowOptions() {
    this._cardsChanged = false;
    const select = this.followEl;
    const chosen = select.value;
    select.replaceChildren(h("option", { value: "", text: "Everything" }));
    for (const card of this.timeline.cards.values()) {
      select.append(h("option", { value: card.id, text: card.title() }));
    }
    select.value = chosen;
  }

  // -- actions --------------------------------------------------------------------------

  follow(subagentId) {
    this.timeline.follow(subagentId);
    this.followEl.value = this.timeline.followed ?? "";
    const card = subagentId ? this.timeline.cards.get(subagentId) : null;
    if (card) card.el.scrollIntoView({ block: "start" });
  }

  async cancel(card) {
    card.cancelling();
    try {
      await this.api.post(`/api/conversations/${this.id}/subagents/${card.id}/cancel`);
    } catch (err) {
      // Not running any more: its finished event is on its way and settles the card.
      if (!(err instanceof ApiError && err.code === "subagent_not_running")) {
        card.cancelFailed();
        this.notice(`Could not cancel: ${err.message}`);
      }
    }
  }

  /** A person's message to one running sub-agent: it reads it before its next model call. */
  async reply(card, text) {
    card.replying();
    try {
      await this.api.post(`/api/conversations/${this.id}/subagents/${card.id}/messages`, { content: text });
      card.replied();
    } catch (err) {
      card.replied(err instanceof ApiError && err.status === 409 ? err.message : `Could not send: ${err.message}`);
    }
  }

  async interrupt() {
    try {
      await this.api.post(`/api/conversations/${this.id}/interrupt`);
    } catch (err) {
      this.notice(`Could not stop: ${err.message}`);
    }
  }

  async send() {
    const content = this.inputEl.value.trim();
    if (!content) return;
    try {
      await this.api.post(`/api/conversations/${this.id}/events`, { content });
      this.inputEl.value = "";
    } catch (err) {
      this.notice(`Could not send: ${err.message}`);
    }
  }

  // -- connection -----------------------------------------------------------------------

  showConnection(state, detail) {
    const text = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…" }[state] ?? state;
    this.connectionEl.textContent = text;
    this.connectionEl.dataset.state = state;
    this.connectionEl.title = detail ?? "";
  }

  fatal(code, reason) {
    this.showConnection("closed", reason);
    if (code === CloseCode.UNAUTHORIZED) {
      this.options.onUnauthorized?.();
    } else if (code === CloseCode.UNKNOWN_CONVERSATION) {
      this.notice("This conversation does not exist (any more).");
    } else {
      this.notice(`The server closed the event stream: ${reason || code}`);
    }
  }

  notice(text) {
    this.noticeEl.hidden = false;
    this.noticeEl.textContent = text;
  }

  // -- measurement (window.__taskwire) --------------------------------------------------

  /** Resolves once the event with `seq` (or a later one) is on screen, after the next paint. */
  rendered(seq) {
    return new Promise((resolve, reject) => {
      this._waiters.push({ seq, resolve, reject });
      this.settleWaiters();
    });
  }

  settleWaiters() {
    const last = this.seqs.length ? this.seqs[this.seqs.length - 1] : 0;
    const ready = this._waiters.filter((w) => w.seq <= last);
    if (!ready.length) return;
    this._waiters = this._waiters.filter((w) => w.seq > last);
    // rAF runs before the paint, the timeout after it.
    requestAnimationFrame(() => setTimeout(() => {
      const figures = { openedAt: this.socket.openedAt, renderedAt: performance.now(), events: this.seqs.length };
      for (const w of ready) w.resolve(figures);
    }, 0));
  }
}
