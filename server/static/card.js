// A sub-agent card: its type, description, status, work state, its own token usage and cost and
// its subtree's, its folder when it works in its own, a cancel button and a reply box while it
// runs, the budget that stopped it, and its own timeline (which may hold the cards of its own
// sub-agents).

import { clip, costText, h, statusLabel, usageText } from "./dom.js";

const TERMINAL = new Set(["completed", "error", "cancelled"]);

/** A work_state value as the card shows it: "running", "waiting for you", "idle · cancelled". */
export function workStateText(workState) {
  if (!workState?.state) return "";
  if (workState.state === "requires_action") return "waiting for you";
  const reason = workState.stop_reason ? ` · ${workState.stop_reason}` : "";
  const error = workState.error ? `: ${clip(workState.error, 200)}` : "";
  return `${workState.state}${reason}${error}`;
}

function usageTotal(usage) {
  return usage ? (usage.input_tokens || 0) + (usage.output_tokens || 0) + (usage.llm_calls || 0) : -1;
}

export class SubagentCard {
  /**
   * @param {string} subagentId
   * @param {{onCancel: Function, onFollow: Function, onReply: Function}} actions
   */
  constructor(subagentId, actions) {
    this.id = subagentId;
    this.status = "running";
    this.usage = null;
    this.depth = 1;
    /** The element the card sits in (its task call's item, or a stand-in at the root). */
    this.item = null;
    /** The stream (sub-agent id, "" for the root) whose call spawned this one. */
    this.parentStream = null;
    this.parentToolUseId = null;

    this.typeEl = h("span", { class: "subagent-type", text: "sub-agent" });
    this.labelEl = h("span", { class: "subagent-label" });
    this.descriptionEl = h("span", { class: "subagent-description" });
    this.statusEl = h("span", { class: "badge", text: "running" });
    this.usageEl = h("span", { class: "usage" });
    this.workEl = h("span", { class: "work-state", "aria-label": "work state" });
    this.cwdEl = h("div", { class: "subagent-cwd", hidden: true });
    this.toggleEl = h("button", {
      type: "button", class: "toggle", "aria-expanded": "true", title: "Collapse",
      onclick: () => this.setExpanded(this.toggleEl.getAttribute("aria-expanded") !== "true"),
    });
    this.followEl = h("button", { type: "button", class: "follow", text: "Follow", onclick: () => actions.onFollow(this.id) });
    this.cancelEl = h("button", {
      type: "button", class: "cancel", text: "Cancel",
      onclick: () => actions.onCancel(this),
    });
    this.subtreeEl = h("span", { class: "subtree-usage", hidden: true });
    this.stopEl = h("span", { class: "stop-reason", hidden: true });
    this.replyInput = h("input", {
      type: "text", class: "reply-input", placeholder: "Write to this sub-agent…", "aria-label": "message to this sub-agent",
    });
    this.replySend = h("button", { type: "submit", class: "reply-send", text: "Send" });
    this.replyEl = h("form", {
      class: "reply", "aria-label": "reply to this sub-agent",
      onsubmit: (e) => {
        e.preventDefault();
        const text = this.replyInput.value.trim();
        if (text && !this.replySend.disabled) actions.onReply(this, text);
      },
    }, this.replyInput, this.replySend);
    this.replyNote = h("div", { class: "reply-note", role: "status", hidden: true });
    this.timeline = h("ol", { class: "timeline", dataset: { stream: subagentId } });
    this.resultEl = h("div", { class: "subagent-result", hidden: true });
    this.el = h(
      "section",
      { class: "card", dataset: { subagentId, status: "running" }, "aria-label": "sub-agent" },
      h("header", { class: "card-head" },
        this.toggleEl, this.typeEl, this.labelEl, this.descriptionEl, this.statusEl, this.workEl, this.usageEl,
        this.subtreeEl, this.stopEl, h("span", { class: "card-actions" }, this.followEl, this.cancelEl)),
      h("div", { class: "card-body" }, this.cwdEl, this.timeline, this.resultEl, this.replyEl, this.replyNote),
    );
    this.body = this.el.querySelector(".card-body");
  }

  get running() {
    return !TERMINAL.has(this.status);
  }

  /** Take what is known about the sub-agent (a SubagentStartedEvent, a tree entry...). Status
   * only moves forward (running to an end) and usage only grows, so a stale answer is harmless. */
  update({ subagent_type, description, label, status, usage, result, work_state, cwd, subtree_usage, stop_reason } = {}) {
    if (subagent_type) this.typeEl.textContent = subagent_type;
    if (label) this.labelEl.textContent = label;
    if (description) {
      this.descriptionEl.textContent = description;
      this.el.dataset.description = description;
      this.el.setAttribute("aria-label", `sub-agent: ${description}`);
    }
    if (status && this.running && status !== this.status) this.setStatus(status);
    if (work_state?.state) {
      this.workEl.textContent = workStateText(work_state);
      this.el.dataset.workState = work_state.state;
    }
    if (cwd) {
      this.cwdEl.hidden = false;
      this.cwdEl.textContent = `in ${cwd}`;
    }
    if (usage && usageTotal(usage) >= usageTotal(this.usage)) {
      this.usage = usage;
      this.usageEl.textContent = usageText(usage);
    }
    if (subtree_usage) this.showSubtree(subtree_usage);
    if (stop_reason) {
      this.stopEl.hidden = false;
      this.stopEl.textContent = `stopped: ${stop_reason}`;
      this.el.dataset.stopReason = stop_reason;
    }
    if (result && !this.running) {
      this.resultEl.hidden = false;
      this.resultEl.textContent = clip(result, 4000);
    }
  }

  setStatus(status) {
    this.status = status;
    const label = statusLabel(status);
    this.statusEl.textContent = label;
    this.el.dataset.status = label;
    this.cancelEl.hidden = !this.running;
    this.cancelEl.disabled = false;
    this.replyEl.hidden = !this.running;
  }

  /** Its subtree's usage (its own and every sub-agent's below it), shown when it has any below. */
  showSubtree(subtree) {
    const own = this.usage?.llm_calls || 0;
    if (!subtree || (subtree.llm_calls || 0) <= own) return;
    this.subtreeUsage = subtree;
    this.subtreeEl.hidden = false;
    this.subtreeEl.textContent = `with its sub-agents: ${subtree.llm_calls} calls${costText(subtree)}`;
  }

  /** The reply is out: no second click until it is answered. */
  replying() {
    this.replySend.disabled = true;
    this.replyNote.hidden = true;
  }

  /** The reply was taken (``note`` empty: the box clears) or refused (``note`` says why). */
  replied(note = "") {
    this.replySend.disabled = false;
    if (!note) this.replyInput.value = "";
    this.replyNote.hidden = !note;
    this.replyNote.textContent = note;
  }

  setExpanded(expanded) {
    this.toggleEl.setAttribute("aria-expanded", String(expanded));
    this.toggleEl.title = expanded ? "Collapse" : "Expand";
    this.body.hidden = !expanded;
  }

  /** The cancel request is out: no second click. */
  cancelling() {
    this.cancelEl.disabled = true;
    this.cancelEl.textContent = "Cancelling…";
  }

  cancelFailed() {
    this.cancelEl.disabled = false;
    this.cancelEl.textContent = "Cancel";
  }

  /** The text the follow filter lists this sub-agent by. */
  title() {
    const name = this.descriptionEl.textContent || this.id.slice(0, 8);
    const label = this.labelEl.textContent;
    return `${"  ".repeat(Math.max(0, this.depth - 1))}${label ? `${label} · ` : ""}${name}`;
  }
}
