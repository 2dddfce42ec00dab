// A tool call as one item: its ActionEvent (or ACPToolCallEvent) opens it, its ObservationEvent
// (or a later ACPToolCallEvent: the last one per tool_call_id wins) fills in status and output.
// The cards of sub-agents the call spawned go in its slot.

import { clip, firstLine, h } from "./dom.js";
import { PermissionBox } from "./permissions.js";

const OUTPUT_LIMIT = 8000;
/** Tools whose result only repeats what the call already shows. */
const QUIET = new Set(["finish", "think"]);
const SPAWNERS = new Set(["task", "Task", "Agent"]);

const STATUS_TEXT = {
  pending: "pending", in_progress: "running", completed: "done", failed: "failed", cancelled: "cancelled",
};

/** A one-line summary of a call's arguments, by tool. */
export function summarize(toolName, args = {}) {
  switch (toolName) {
    case "terminal":
      return `$ ${args.command ?? ""}`;
    case "file_editor":
      return `${args.command ?? ""} ${args.path ?? ""}`.trim();
    case "task":
      return args.description ?? "";
    case "finish":
      return firstLine(args.message, 200);
    case "think":
      return firstLine(args.thought, 200);
    default: {
      const text = JSON.stringify(args);
      return text === "{}" ? "" : firstLine(text, 160);
    }
  }
}

/** The readable output of an ACP tool call: its text content blocks, else its raw output. */
function acpOutput(event) {
  const texts = [];
  for (const block of event.content ?? []) {
    const inner = block?.content ?? block;
    if (typeof inner?.text === "string") texts.push(inner.text);
    else if (block?.type === "diff") texts.push(`diff ${block.path ?? ""}`);
  }
  if (texts.length) return texts.join("\n");
  const raw = event.raw_output;
  if (raw == null) return "";
  return typeof raw === "string" ? raw : JSON.stringify(raw, null, 2);
}

export class ToolCallView {
  constructor(stream, toolCallId, toolName) {
    this.stream = stream;
    this.id = toolCallId;
    this.statusEl = h("span", { class: "call-status", text: STATUS_TEXT.in_progress });
    this.toolEl = h("span", { class: "tool", text: toolName });
    this.summaryEl = h("code", { class: "summary" });
    /** Where the cards of sub-agents this call spawned go. */
    this.slot = h("div", { class: "spawned" });
    this.outputEl = null;
    /** The permission request this call waits on (or last waited on). */
    this.permission = null;
    this.el = h(
      "li",
      { class: "item call", dataset: { toolCallId, tool: toolName, status: "in_progress" } },
      h("div", { class: "call-head" }, this.statusEl, this.toolEl, this.summaryEl),
      this.slot,
    );
  }

  get spawns() {
    return SPAWNERS.has(this.el.dataset.tool);
  }

  setAction(event) {
    this.el.dataset.seq = event.seq ?? "";
    this.summaryEl.textContent = summarize(event.tool_name, event.arguments);
    if (event.tool_name === "task" && event.arguments?.subagent_type) {
      this.summaryEl.title = `sub-agent type: ${event.arguments.subagent_type}`;
    }
  }

  setObservation(event) {
    this.setStatus(event.status ?? (event.is_error ? "failed" : "completed"));
    if (QUIET.has(event.tool_name) && !event.is_error) return;
    this.setOutput(event.content, { collapsed: this.spawns && !event.is_error, error: event.is_error });
  }

  /** An ACP tool call update: the last one per tool_call_id wins. */
  setACP(event) {
    if (event.title) {
      this.summaryEl.textContent = firstLine(event.title, 200);
    }
    if (event.tool_kind) this.toolEl.textContent = event.tool_kind;
    if (event.status) this.setStatus(event.is_error && event.status === "completed" ? "failed" : event.status);
    const output = acpOutput(event);
    if (output) this.setOutput(output, { collapsed: this.spawns, error: event.is_error });
  }

  /** A permission request: the call waits (`pending`) and shows the request's box. */
  askPermission(request, onAnswer) {
    if (this.permission?.requestId === request.request_id) return this.permission;
    this.permission?.el.remove();
    this.permission = new PermissionBox(request, onAnswer);
    this.el.querySelector(".call-head").after(this.permission.el);
    if (!this.summaryEl.textContent && request.title) this.summaryEl.textContent = firstLine(request.title, 200);
    this.setStatus("pending");
    return this.permission;
  }

  /** How its request ended; allowed, it runs. */
  resolvePermission(event) {
    if (this.permission?.requestId !== event.request_id) return;
    this.permission.resolve(event);
    if (this.el.dataset.status === "pending" && event.outcome === "allowed") this.setStatus("in_progress");
  }

  setStatus(status) {
    this.el.dataset.status = status;
    this.statusEl.textContent = STATUS_TEXT[status] ?? status;
  }

  setOutput(text, { collapsed = false, error = false } = {}) {
    this.outputEl?.remove();
    const pre = h("pre", { class: error ? "output error" : "output", text: clip(text, OUTPUT_LIMIT) });
    this.outputEl = collapsed
      ? h("details", { class: "result" }, h("summary", { text: "Result the agent received" }), pre)
      : pre;
    this.el.append(this.outputEl);
  }
}
