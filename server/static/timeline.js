// The conversation as a tree of timelines, built event by event (never rebuilt).
//
// Each stream (the root's, and each sub-agent's) is an <ol>. An event goes to the stream of its
// subagent_id (the root's when it has none). A sub-agent's card goes into the tool call whose
// tool_call_id equals its parent_tool_use_id, looked up in the stream of the sub-agent that
// spawned it (parent_subagent_id) when that is known. A card whose call has not arrived waits
// at the root, and moves into the call when it does.

import { SubagentCard } from "./card.js";
import { ToolCallView } from "./calls.js";
import { clip, h } from "./dom.js";

const ROOT = "";
const TEXT_LIMIT = 20000;

class Stream {
  constructor(key, list, card) {
    this.key = key;
    this.list = list;
    this.card = card;
    /** The assistant text streaming in (token deltas), until the stored event replaces it. */
    this.draft = null;
  }
}

/** "retrying in 4 s (429), attempt 2 of 7", as `taskwire watch` says it. */
export function retryLine(event) {
  const delay = Number(event.delay ?? 0);
  const wait = delay >= 1.5 || delay === 0 ? `${Math.round(delay)} s` : `${delay.toFixed(1)} s`;
  let line = `retrying in ${wait} (${event.reason ?? "error"})`;
  if (event.attempt && event.max_attempts) line += `, attempt ${event.attempt} of ${event.max_attempts}`;
  return line;
}

export class Timeline {
  /** @param {{onCancel: Function, onFollow: Function, onCardAdded: Function, onAnswer: Function}} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    this.el = h("ol", { class: "timeline root", dataset: { stream: "root" } });
    this.streams = new Map([[ROOT, new Stream(ROOT, this.el, null)]]);
    this.calls = new Map(); // `${stream}\n${tool_call_id}` -> ToolCallView
    this.callsById = new Map(); // tool_call_id -> ToolCallView, when the stream is not known
    this.cards = new Map(); // subagent_id -> SubagentCard
    this.waiting = new Map(); // parent_tool_use_id -> cards whose call has not arrived
    this.requests = new Map(); // request_id -> the ToolCallView that shows it
    this.followed = null;
    this._path = [];
  }

  /** Take in one event (stored or ephemeral). */
  apply(event) {
    const stream = this.streamOf(event);
    switch (event.kind) {
      case "StreamingDeltaEvent":
        this.delta(stream, event);
        break;
      case "MessageEvent":
        this.message(stream, event);
        break;
      case "ActionEvent":
        this.action(stream, event);
        break;
      case "ObservationEvent":
        this.callFor(stream, event.tool_call_id, event.tool_name).setObservation(event);
        break;
      case "ACPToolCallEvent":
        this.callFor(stream, event.tool_call_id, event.title || "tool").setACP(event);
        break;
      case "PermissionRequestEvent":
        this.showRequest(stream, event);
        break;
      case "PermissionResolvedEvent":
        this.requests.get(event.request_id)?.resolvePermission(event);
        break;
      case "AgentErrorEvent":
        this.dropDraft(stream);
        this.append(stream, h("li", { class: "item error", dataset: { seq: event.seq } },
          h("div", { class: "who", text: "Error" }), h("div", { class: "text", text: clip(event.error, TEXT_LIMIT) })));
        break;
      case "LLMRetryEvent":
        // The failed attempt's streamed text is dropped: the retry streams the answer anew.
        if (event.discard_text) this.dropDraft(stream);
        this.append(stream, h("li", { class: "item retry", dataset: { seq: event.seq }, title: event.error ?? "" },
          h("div", { class: "who", text: "Model" }), h("div", { class: "text", text: retryLine(event) })));
        break;
      case "SubagentStartedEvent":
        stream.card?.update({ ...event, status: "running" });
        break;
      case "SubagentFinishedEvent":
        stream.card?.update(event);
        break;
      default:
        break; // status changes show in the header, not in the timeline
    }
  }

  /** Take in the sub-agent tree (full_state's `subagents`, or GET .../subagents). */
  applySubagents(entries) {
    for (const entry of entries ?? []) {
      const card = this.cards.get(entry.subagent_id)
        ?? this.addCard(entry.subagent_id, entry.parent_tool_use_id, entry.parent_subagent_id ?? ROOT);
      card.update(entry);
    }
  }

  /** A permission request, in the stream of the agent that asks (`stream`; or, for an entry
   * of GET .../permissions, the stream its subagent_id names, when that card is on the page). */
  showRequest(stream, request) {
    stream ??= this.streams.get(request.subagent_id ?? ROOT);
    if (!stream) return false;
    const call = this.callFor(stream, request.tool_call_id, request.tool_name);
    call.askPermission(request, this.hooks.onAnswer);
    this.requests.set(request.request_id, call);
    return true;
  }

  /** Whether the page shows request `id`, waiting or answered. */
  shows(id) {
    return this.requests.has(id);
  }

  /** Show only sub-agent `id` (and the calls leading to it); null shows everything. */
  follow(id) {
    for (const el of this._path) el.classList.remove("on-path", "followed");
    this._path = [];
    const card = id ? this.cards.get(id) : null;
    this.followed = card ? id : null;
    this.el.classList.toggle("following", card != null);
    if (!card) return;
    card.el.classList.add("followed");
    this._path.push(card.el);
    for (let c = card; c; c = c.parent) {
      c.setExpanded(true);
      c.item.classList.add("on-path");
      this._path.push(c.item);
    }
  }

  // -- streams and cards ------------------------------------------------------------------

  streamOf(event) {
    const key = event.subagent_id ?? ROOT;
    if (!this.streams.has(key)) {
      const parentStream = event.kind === "SubagentStartedEvent" ? event.parent_subagent_id ?? ROOT : null;
      this.addCard(key, event.parent_tool_use_id ?? null, parentStream);
    }
    return this.streams.get(key);
  }

  /** Recompute the subtree usage of every card above `subagentId` (and its own), from the
   * cards' own usage: what a sub-agent and everything below it used, live. */
  refreshSubtrees(subagentId) {
    let card = this.cards.get(subagentId);
    while (card) {
      let total = null;
      for (const other of this.cards.values()) {
        if (!other.usage || !this.isWithin(other, card)) continue;
        total = addUsage(total, other.usage);
      }
      card.showSubtree(total);
      card = this.cards.get(card.parentStream);
    }
  }

  /** Whether `card` is `ancestor` or below it. */
  isWithin(card, ancestor) {
    for (let node = card; node; node = this.cards.get(node.parentStream)) {
      if (node === ancestor) return true;
    }
    return false;
  }

  addCard(id, parentToolUseId, parentStream) {
    const card = new SubagentCard(id, this.hooks);
    card.parentToolUseId = parentToolUseId;
    card.parentStream = parentStream;
    this.cards.set(id, card);
    this.streams.set(id, new Stream(id, card.timeline, card));
    const call = this.findCall(parentStream, parentToolUseId);
    if (call) {
      this.attach(card, call);
    } else {
      card.item = h("li", { class: "item waiting" }, card.el);
      card.parent = null;
      this.el.append(card.item);
      const list = this.waiting.get(parentToolUseId) ?? [];
      list.push(card);
      this.waiting.set(parentToolUseId, list);
    }
    this.hooks.onCardAdded?.(card);
    return card;
  }

  attach(card, call) {
    if (card.item?.classList.contains("waiting")) card.item.remove();
    call.slot.append(card.el);
    card.item = call.el;
    card.parent = this.streams.get(call.stream)?.card ?? null;
    card.depth = (card.parent?.depth ?? 0) + 1;
    if (this.followed) this.follow(this.followed);
  }

  findCall(streamKey, toolCallId) {
    if (toolCallId == null) return null;
    if (streamKey != null) {
      const exact = this.calls.get(`${streamKey}\n${toolCallId}`);
      if (exact) return exact;
    }
    return this.callsById.get(toolCallId) ?? null;
  }

  // -- items ------------------------------------------------------------------------------

  append(stream, item) {
    stream.list.append(item);
  }

  callFor(stream, toolCallId, toolName) {
    let call = this.calls.get(`${stream.key}\n${toolCallId}`);
    if (call) return call;
    call = new ToolCallView(stream.key, toolCallId, toolName);
    this.dropDraft(stream);
    this.append(stream, call.el);
    this.calls.set(`${stream.key}\n${toolCallId}`, call);
    this.callsById.set(toolCallId, call);
    // Cards that arrived before their call move in now.
    const waiting = this.waiting.get(toolCallId);
    if (waiting) {
      const stay = waiting.filter((card) => card.parentStream != null && card.parentStream !== stream.key);
      for (const card of waiting) if (!stay.includes(card)) this.attach(card, call);
      if (stay.length) this.waiting.set(toolCallId, stay);
      else this.waiting.delete(toolCallId);
    }
    return call;
  }

  action(stream, event) {
    this.dropDraft(stream);
    if (event.thought) this.append(stream, this.messageItem(stream, "assistant", event.thought, event.seq));
    this.callFor(stream, event.tool_call_id, event.tool_name).setAction(event);
  }

  message(stream, event) {
    if (event.role === "assistant") this.dropDraft(stream);
    this.append(stream, this.messageItem(stream, event.role, event.content, event.seq));
  }

  messageItem(stream, role, text, seq) {
    const who = role === "user" ? (stream.key === ROOT ? "You" : "Task prompt") : role === "system" ? "System" : "Agent";
    return h("li", { class: `item message ${role}`, dataset: { seq: seq ?? "" } },
      h("div", { class: "who", text: who }), h("div", { class: "text", text: clip(text, TEXT_LIMIT) }));
  }

  delta(stream, event) {
    if (!stream.draft) {
      const text = document.createTextNode("");
      const el = h("li", { class: "item message assistant streaming", "aria-busy": "true" },
        h("div", { class: "who", text: "Agent" }), h("div", { class: "text" }, text));
      stream.draft = { el, text };
      this.append(stream, el);
    }
    stream.draft.text.appendData(event.content ?? "");
  }

  dropDraft(stream) {
    if (stream.draft) {
      stream.draft.el.remove();
      stream.draft = null;
    }
  }
}

/** Two usage objects added, as the server adds them (a cost stays unknown only while both are). */
function addUsage(a, b) {
  if (!a) return { ...b };
  const sum = { ...a };
  for (const key of ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "llm_calls", "unpriced_calls"]) {
    sum[key] = (a[key] || 0) + (b[key] || 0);
  }
  sum.cost_usd = a.cost_usd == null ? b.cost_usd ?? null : b.cost_usd == null ? a.cost_usd : Math.round((a.cost_usd + b.cost_usd) * 1e12) / 1e12;
  return sum;
}
