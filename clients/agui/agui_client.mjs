// The real AG-UI client against taskwire: @ag-ui/client's HttpAgent runs (runAgent) and
// follows (connectAgent) threads with its own verification on, and every event on the wire is
// validated against @ag-ui/core's zod schemas. Prints what it saw as one JSON object.
//
//   node agui_client.mjs < plan.json
//
// plan: {"base": "http://127.0.0.1:N", "headers": {...}, "steps": [
//          {"op": "run", "threadId", "runId", "message", "forwardedProps"?},
//          {"op": "run", "threadId", "runId", "answer": [{"match", "status", "payload"?}]},
//          {"op": "connect", "threadId", "lastEventId"?, "query"?},
//          {"op": "validate", "events": [event]}]}      (schemas only: events made elsewhere)
// out:  {"steps": [{"op", "threadId", "frames": [{"id", "event"}], "received": [event],
//                   "result", "newMessages", "lastSeq", "error", "schemaErrors", "warnings",
//                   "pendingInterrupts", "resume"}]}
// A thread's "run" steps share one HttpAgent (its messages, its pending interrupts). With
// "answer", the run resumes: each of the agent's pending interrupts gets the entry of the first
// rule whose "match" (a deep subset of the interrupt) fits it; one no rule fits is left out, and
// the client's own coverage check refuses the run.

import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

const warnings = [];
const warn = console.warn;
// The client warns where it had to strip or repair what a server sent: count that as a fault.
console.warn = (...args) => {
  warnings.push(args.map(String).join(" "));
  warn(...args);
};

/** A fetch that hands the client the response and keeps a copy of the raw SSE frames. */
function teeingFetch(frames, done) {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (!response.ok || !response.body) {
      done.push(Promise.resolve());
      return response;
    }
    const [forClient, forUs] = response.body.tee();
    done.push(readFrames(forUs, frames));
    return new Response(forClient, { status: response.status, headers: response.headers });
  };
}

async function readFrames(body, frames) {
  const decoder = new TextDecoder();
  let buffer = "";
  const take = (block) => {
    let id = null;
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("id:")) id = line.slice(3).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length) frames.push({ id, event: JSON.parse(data.join("\n")) });
  };
  try {
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      const blocks = buffer.split("\n\n");
      buffer = blocks.pop();
      blocks.forEach(take);
    }
  } catch {
    // the client aborted: keep what came
  }
  if (buffer.trim()) take(buffer);
}

const agents = new Map();

function matches(value, pattern) {
  if (pattern === null || typeof pattern !== "object") return value === pattern;
  if (value === null || typeof value !== "object") return false;
  return Object.entries(pattern).every(([key, expected]) => matches(value[key], expected));
}

function resumeFor(agent, rules) {
  const resume = [];
  for (const interrupt of agent.pendingInterrupts) {
    const rule = rules.find((r) => matches(interrupt, r.match ?? {}));
    if (rule) resume.push({ interruptId: interrupt.id, status: rule.status ?? "resolved", ...(rule.payload !== undefined ? { payload: rule.payload } : {}) });
  }
  return resume;
}

/** HttpAgent has no connect of its own in 1.0.0: this is the documented override point. */
class FollowingAgent extends HttpAgent {
  constructor(config) {
    super(config);
    this.followUrl = config.followUrl;
    this.lastEventId = config.lastEventId;
  }

  connect() {
    const headers = { ...this.headers, Accept: "text/event-stream" };
    if (this.lastEventId != null) headers["Last-Event-ID"] = String(this.lastEventId);
    const request = () => this.fetch(this.followUrl, { method: "GET", headers, signal: this.abortController.signal });
    return transformHttpEventStream(runHttpRequest(request));
  }
}

async function runStep(plan, step) {
  if (step.op === "validate") {
    const frames = step.events.map((event, n) => ({ id: String(n), event }));
    return { op: "validate", frames, received: [], error: null, schemaErrors: schemaErrors(frames), warnings: [] };
  }
  const frames = [];
  const reading = [];
  const received = [];
  const out = { op: step.op, threadId: step.threadId, frames, received, error: null };
  const fetch = teeingFetch(frames, reading);
  const subscriber = { onEvent: ({ event }) => void received.push(event) };
  const start = warnings.length;
  try {
    let outcome;
    if (step.op === "run") {
      let agent = agents.get(step.threadId);
      if (!agent) {
        agent = new HttpAgent({ url: `${plan.base}/agui`, headers: plan.headers, threadId: step.threadId });
        agents.set(step.threadId, agent);
      }
      agent.fetch = fetch;
      if (step.message != null) agent.addMessage({ id: `user-${step.runId}`, role: "user", content: step.message });
      const input = { runId: step.runId, forwardedProps: step.forwardedProps ?? {} };
      if (step.answer) out.resume = input.resume = resumeFor(agent, step.answer);
      try {
        outcome = await agent.runAgent(input, subscriber);
      } finally {
        out.messages = agent.messages;
        out.pendingInterrupts = agent.pendingInterrupts;
      }
    } else {
      const query = step.query ? `?${step.query}` : "";
      const agent = new FollowingAgent({
        url: `${plan.base}/agui`, headers: plan.headers, threadId: step.threadId, fetch,
        followUrl: `${plan.base}/agui/${step.threadId}${query}`, lastEventId: step.lastEventId,
      });
      outcome = await agent.connectAgent({}, subscriber);
      out.messages = agent.messages;
    }
    out.result = outcome.result ?? null;
    out.newMessages = outcome.newMessages;
  } catch (error) {
    out.error = String(error?.message ?? error);
  }
  await Promise.all(reading);
  // What a client that keeps the last metadata.taskwire.seq it was handed would resume after.
  out.lastSeq = received.reduce((seq, event) => event.metadata?.taskwire?.seq ?? seq, null);
  out.schemaErrors = schemaErrors(frames);
  out.warnings = warnings.slice(start);
  return out;
}

function schemaErrors(frames) {
  return frames
    .map(({ id, event }) => ({ id, type: event?.type, result: EventSchema.safeParse(event) }))
    .filter(({ result }) => !result.success)
    .map(({ id, type, result }) => ({ id, type, issues: result.error.issues }));
}

const input = await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => resolve(text));
});
const plan = JSON.parse(input);
const steps = [];
for (const step of plan.steps) steps.push(await runStep(plan, step));
process.stdout.write(JSON.stringify({ steps }));
