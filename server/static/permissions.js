// Permission requests on the page. A request shows inside the call that waits, in the stream of
// the agent that asks (so a sub-agent's request is inside that sub-agent's card): the tool, its
// arguments, and the options it offers as buttons. The tree's waiting set (the root's
// `pending_permissions`, there with forwarding off too) marks the asking card, the task calls
// and cards above it, and the page header.

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
