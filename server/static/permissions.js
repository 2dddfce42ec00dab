// Permission requests on the page. A request shows inside the call that waits, in the stream of
// the agent that asks (so a sub-agent's request is inside that sub-agent's card): the tool, its
// arguments, and the options it offers as buttons. The tree's waiting set (the root's
// `pending_permissions`, there with forwarding off too) marks the asking card, the task calls
// and cards above it, and the page header.

import { ApiError } from "./api.js";
import { clip, h } from "./dom.js";

const ARGUMENTS_LIMIT = 4000;

const OUTCOME_TEXT = {
  allowed: "Allowed",
  rejected: "Rejected",
  cancelled: "Cancelled",
  timed_out: "Timed out",
  answered: "Answered",
};

/** One request: its details and buttons, then how it ended. */
export class PermissionBox {
  /**
   * @param {object} request a PermissionRequestEvent, or a GET .../permissions entry
   * @param {(box: PermissionBox, option: object) => Promise<void>} onAnswer
   */
  constructor(request, onAnswer) {
    this.requestId = request.request_id;
    this.resolved = false;
    this.messageEl = h("p", { class: "permission-message", role: "status" });
    this.buttons = (request.options ?? []).map((option) => h("button", {
      type: "button",
      class: `permission-option ${option.kind}`,
      dataset: { optionId: option.option_id, kind: option.kind },
      text: option.name || option.option_id,
      onclick: () => onAnswer(this, option),
    }));
    const args = JSON.stringify(request.arguments ?? {}, null, 2);
    this.el = h("div", {
      class: "permission", role: "group", "aria-label": `permission request: ${request.tool_name}`,
      dataset: { requestId: request.request_id, state: "pending" },
    },
    h("div", { class: "permission-head" },
      h("span", { class: "permission-mark", text: "Waiting for you" }),
      h("span", { class: "permission-tool", text: request.tool_name }),
      h("code", { class: "permission-title", text: request.title ?? "" })),
    request.reason ? h("p", { class: "permission-reason muted", text: request.reason }) : null,
    h("pre", { class: "permission-arguments", text: clip(args, ARGUMENTS_LIMIT) }),
    h("div", { class: "permission-options" }, ...this.buttons),
    this.messageEl);
  }

  /** The answer is on its way: no second click. */
  busy(on) {
    for (const button of this.buttons) button.disabled = on || this.resolved;
  }

  say(text) {
    this.messageEl.textContent = text;
  }

  /** How it ended (a PermissionResolvedEvent, or {outcome: "answered"} when only the pending
   * set said so). */
  resolve(event) {
    this.resolved = true;
    const state = event.outcome ?? "answered";
    this.el.dataset.state = state;
    this.el.querySelector(".permission-mark").textContent = OUTCOME_TEXT[state] ?? state;
    for (const button of this.buttons) button.remove();
    this.buttons = [];
    const by = event.answered_by ? ` (${event.answered_by})` : "";
    this.say(`${OUTCOME_TEXT[state] ?? state}${by}${event.reason ? `: ${event.reason}` : ""}`);
  }
}

/** The waiting marks, redrawn from the tree's pending set each time it changes. */
export class WaitingMarks {
  constructor(timeline, headerEl) {
    this.timeline = timeline;
    this.headerEl = headerEl;
    this._marked = [];
  }

  /** @param {Array<{request_id: string, subagent_id?: string, tool_call_id?: string}>} entries */
  show(entries) {
    for (const [el, name] of this._marked) el.classList.remove(name);
    this._marked = [];
    const mark = (el, name) => {
      if (!el) return;
      el.classList.add(name);
      this._marked.push([el, name]);
    };
    for (const entry of entries) {
      const card = entry.subagent_id ? this.timeline.cards.get(entry.subagent_id) : null;
      if (card) mark(card.el, "asks");
      // The task call that spawned it and every card and call above it: something below waits.
      for (let c = card; c; c = c.parent) {
        mark(c.item, "waits");
        if (c !== card) mark(c.el, "waits");
      }
      const call = this.timeline.findCall(entry.subagent_id ?? "", entry.tool_call_id);
      if (call) mark(call.el, "asks");
    }
    const n = entries.length;
    this.headerEl.hidden = n === 0;
    this.headerEl.textContent = n === 1 ? "1 waiting for you" : `${n} waiting for you`;
  }
}

/** The page's side of one tree's requests: the waiting set as the root states it, the marks
 * it draws, requests read over REST when their events do not come (forwarding off), and
 * answers sent from the buttons. */
export class PermissionDesk {
  constructor(api, conversationId, timeline, headerEl) {
    this.api = api;
    this.id = conversationId;
    this.timeline = timeline;
    this.marks = new WaitingMarks(timeline, headerEl);
    /** The tree's waiting requests, as the root last said (`pending_permissions`). */
    this.pending = [];
    /** Request ids seen waiting in the stream: one that leaves the set has been answered. */
    this._wasPending = new Set();
    this._loading = false;
  }

  /** The waiting set changed (`fromStream`: a stored state, not full_state's present, which
   * the replay after it may still be behind). */
  apply(entries, fromStream = true) {
    this.pending = entries;
    const now = new Set(entries.map((e) => e.request_id));
    for (const id of this._wasPending) {
      if (!now.has(id)) {
        const call = this.timeline.requests.get(id);
        if (call?.permission && !call.permission.resolved) call.resolvePermission({ request_id: id, outcome: "answered" });
        this._wasPending.delete(id);
      }
    }
    if (fromStream) for (const id of now) this._wasPending.add(id);
    if (entries.some((e) => !this.timeline.shows(e.request_id))) this.load();
    this.marks.show(entries);
  }

  /** Requests the page does not show yet (a sub-agent's, forwarding off), read over REST. */
  async load() {
    if (this._loading) return;
    this._loading = true;
    try {
      let requests = await this.api.get(`/api/conversations/${this.id}/permissions`);
      if (requests.some((r) => r.subagent_id && !this.timeline.cards.has(r.subagent_id))) {
        this.timeline.applySubagents(await this.api.get(`/api/conversations/${this.id}/subagents`));
      }
      const waiting = new Set(this.pending.map((e) => e.request_id));
      requests = requests.filter((r) => waiting.has(r.request_id) && !this.timeline.shows(r.request_id));
      for (const request of requests) this.timeline.showRequest(null, request);
      this.marks.show(this.pending);
    } catch {
      // the next change of the waiting set asks again
    } finally {
      this._loading = false;
    }
  }

  /** A button was clicked: answer with its option. */
  async answer(box, option) {
    box.busy(true);
    box.say("Sending…");
    try {
      const path = `/api/conversations/${this.id}/permissions/${encodeURIComponent(box.requestId)}`;
      box.resolve(await this.api.post(path, { option_id: option.option_id }));
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        box.say("Already answered elsewhere.");
      } else {
        box.say(`Could not answer: ${err.message}`);
        box.busy(false);
      }
    }
  }
}
