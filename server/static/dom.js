// Small DOM and formatting helpers. Event data only ever enters the page as text nodes
// (textContent), never as HTML.

/** Make an element: h("li", {class: "item", dataset: {seq: 3}, onclick: fn}, child, "text"). */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child != null && child !== false) el.append(child);
  }
  return el;
}

/** Text cut to `max` characters, saying how much was left out. */
export function clip(text, max) {
  const s = String(text ?? "");
  return s.length <= max ? s : `${s.slice(0, max)}\n… (${s.length - max} more characters)`;
}

/** One line: the first non-empty line of `text`, cut to `max`. */
export function firstLine(text, max = 120) {
  const line = String(text ?? "").split("\n").find((l) => l.trim()) ?? "";
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** 1234 -> "1.2k". */
export function count(n) {
  const v = Number(n) || 0;
  if (v < 1000) return String(v);
  if (v < 1_000_000) return `${(v / 1000).toFixed(v < 10_000 ? 1 : 0)}k`;
  return `${(v / 1_000_000).toFixed(1)}M`;
}

/** "12 in · 4 out" for a usage object, "" when nothing was used yet. */
export function usageText(usage) {
  if (!usage) return "";
  const input = usage.input_tokens || 0;
  const output = usage.output_tokens || 0;
  if (!input && !output && !usage.llm_calls) return "";
  return `${count(input)} in · ${count(output)} out tokens${costText(usage)}`;
}

/** " · $0.0123" for a usage with a cost ("≥" when some calls have no known price), else "". */
export function costText(usage) {
  if (usage?.cost_usd == null) return "";
  return ` · ${usage.unpriced_calls ? "≥" : ""}$${Number(usage.cost_usd).toFixed(4)}`;
}

/** How a status reads on the page: the wire's `error` is shown as `failed`. */
export function statusLabel(status) {
  return status === "error" ? "failed" : status || "unknown";
}

/** A short form of a uuid for labels. */
export function shortId(id) {
  return String(id ?? "").slice(0, 8);
}

/** "3 min ago" style, from an ISO timestamp. */
export function ago(iso) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const s = Math.max(0, Math.round((Date.now() - then) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(then).toLocaleDateString();
}
