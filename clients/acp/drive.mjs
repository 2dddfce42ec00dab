#!/usr/bin/env node
// A real ACP client: the official SDK's client app (@agentclientprotocol/sdk) drives an agent it
// spawns, step by step, and prints everything it sees as JSON lines on stdout.
//
//   node drive.mjs PLAN.json -- COMMAND [ARGS...]
//
// PLAN.json: {"steps": [{"op": "initialize"}, {"op": "new", "cwd": "/abs", "meta": {...}},
//   {"op": "prompt", "text": "...", "cancel_on": {"match": {...}, "count": 1}},
//   {"op": "load", "cwd": "/abs"}, {"op": "list"}, {"op": "answered", "count": N}]}
// `new` remembers the session id; later steps use it unless they name `session`.
// `cancel_on` sends session/cancel once `count` updates matched `match` (a deep subset).
// PLAN.json's "permissions": [{"match": {...}, "choose": "allow_once"|...|"cancelled",
//   "after": {...}}] answers each session/request_permission by the first rule whose `match`
// (a deep subset of its params) fits: the offered option of kind `choose`, or the cancelled
// outcome; with `after`, only once an update matching it has come (answering late); with
// `reply`, that object as the whole answer (a faulty editor). No rule
// matching: cancelled. The "answered" step waits until N permission requests were answered.
//
// Output lines: {"kind": "raw", "params"} for every session/update as it came off the wire,
// {"kind": "update", "step", "params"} for every one the SDK validated and handed over,
// {"kind": "result"|"error", "step", "op", ...} per step, {"kind": "sdk_error", "message"}
// for anything the SDK complained about (an update it rejected), {"kind": "permission",
// "step", "params"} per permission request and {"kind": "permission_answer", "step",
// "params", "outcome"} as it is answered, {"kind": "exit", "code"}.
// A step's "session_of": {"match": {...}} names the child session of the first update seen that
// matches (its update.sessionId, e.g. a subagent_update's); {"op": "cancel"} sends session/cancel
// for its session and goes on; {"op": "wait", "match": {...}} waits for an update matching.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";


const separator = process.argv.indexOf("--");
if (separator < 0 || separator + 1 >= process.argv.length) {
  process.stderr.write("usage: node drive.mjs PLAN.json -- COMMAND [ARGS...]\n");
  process.exit(2);
}
const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
// "unstable": true drives through the SDK's unstable entry, whose zod schemas know the
// subagents RFD (subagent_update, session_message), and declares clientCapabilities.subagents.
const acp = plan.unstable ? await import("@agentclientprotocol/sdk/unstable") : await import("@agentclientprotocol/sdk");
const [command, ...args] = process.argv.slice(separator + 1);
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

// The SDK reports a notification it cannot parse with console.error and drops it.
console.error = (...parts) => print({ kind: "sdk_error", message: parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" ") });

const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
const wire = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const tap = new TransformStream({
  transform(message, controller) {
    if (message.method === "session/update") print({ kind: "raw", params: message.params });
    else if (message.method === undefined) print({ kind: "answer", id: message.id }); // where a response fell among the updates
    controller.enqueue(message);
  },
});
const stream = { writable: wire.writable, readable: wire.readable.pipeThrough(tap) };

function matches(value, pattern) {
  if (pattern === null || typeof pattern !== "object") return value === pattern;
  if (value === null || typeof value !== "object") return false;
  return Object.entries(pattern).every(([key, expected]) => matches(value[key], expected));
}

let step = -1;
let sessionId = null;
let pending = null; // a background prompt's answer
let cancel = null; // {match, count, seen, sent}
const seenUpdates = [];
let answers = 0;
const answerWaiters = [];
const updateWaiters = [];

function updateMatching(pattern, count = 1) {
  if (seenUpdates.filter((update) => matches(update, pattern)).length >= count) return Promise.resolve();
  return new Promise((resolve) => updateWaiters.push({ pattern, count, resolve }));
}

async function answerPermission(params) {
  const rule = (plan.permissions ?? []).find((r) => matches(params, r.match ?? {}));
  if (rule?.after) await updateMatching(rule.after);
  if (rule?.reply) return rule.reply; // as given, however wrong
  const option = rule && rule.choose !== "cancelled" ? params.options.find((o) => o.kind === rule.choose) : null;
  return option ? { outcome: { outcome: "selected", optionId: option.optionId } } : { outcome: { outcome: "cancelled" } };
}

const app = acp
  .client({ name: "taskwire-test-client" })
  .onNotification(acp.methods.client.session.update, async ({ params, agent }) => {
    print({ kind: "update", step, params });
    seenUpdates.push(params.update);
    const met = (w) => seenUpdates.filter((update) => matches(update, w.pattern)).length >= (w.count ?? 1);
    for (const waiter of updateWaiters.filter((w) => matches(params.update, w.pattern) && met(w))) {
      updateWaiters.splice(updateWaiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    if (cancel && !cancel.sent && matches(params.update, cancel.match) && ++cancel.seen >= (cancel.count ?? 1)) {
      cancel.sent = true;
      // "root": true cancels the session the step prompted, not the (child) session the update came on.
      const target = cancel.root ? sessionId : params.sessionId;
      print({ kind: "cancel", step, sessionId: target });
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: target });
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    print({ kind: "permission", step, params });
    const answer = await answerPermission(params);
    print({ kind: "permission_answer", step, params, outcome: answer.outcome });
    answers += 1;
    for (const waiter of answerWaiters.filter((w) => answers >= w.count)) {
      answerWaiters.splice(answerWaiters.indexOf(waiter), 1);
      waiter.resolve({ answered: answers });
    }
    return answer;
  });

function sessionOf(pattern) {
  const found = seenUpdates.find((update) => matches(update, pattern));
  if (!found) throw new Error(`no update seen matches ${JSON.stringify(pattern)}`);
  return found.sessionId;
}

async function run(ctx, entry) {
  const session = entry.session_of ? sessionOf(entry.session_of.match) : (entry.session ?? sessionId);
  switch (entry.op) {
    case "initialize":
      return ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...(plan.unstable ? { subagents: {} } : {}),
        },
        clientInfo: { name: "taskwire-test-client", version: "0" },
      });
    case "new": {
      const result = await ctx.request(acp.methods.agent.session.new, {
        cwd: entry.cwd, mcpServers: [], ...(entry.meta ? { _meta: entry.meta } : {}),
      });
      sessionId = result.sessionId;
      return result;
    }
    case "prompt":
      if (entry.background) {
        // Sent, not awaited: later steps (a cancel of one child) run while it goes on.
        pending = ctx.request(acp.methods.agent.session.prompt, { sessionId: session, prompt: [{ type: "text", text: entry.text }] });
        return { sent: true };
      }
      cancel = entry.cancel_on ? { ...entry.cancel_on, seen: 0, sent: false } : null;
      return ctx.request(acp.methods.agent.session.prompt, { sessionId: session, prompt: [{ type: "text", text: entry.text }] });
    case "load":
      return ctx.request(acp.methods.agent.session.load, { sessionId: session, cwd: entry.cwd, mcpServers: [] });
    case "cancel":
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session });
      return { cancelled: session };
    case "wait":
      await updateMatching(entry.match, entry.count ?? 1);
      return { seen: true };
    case "list":
      return ctx.request(acp.methods.agent.session.list, entry.cwd ? { cwd: entry.cwd } : {});
    case "awaited":
      return pending;
    case "answered":
      if (answers >= entry.count) return { answered: answers };
      return new Promise((resolve) => answerWaiters.push({ count: entry.count, resolve }));
    default:
      throw new Error(`unknown op ${entry.op}`);
  }
}

await app.connectWith(stream, async (ctx) => {
  for (const [index, entry] of plan.steps.entries()) {
    step = index;
    try {
      print({ kind: "result", step, op: entry.op, result: await run(ctx, entry) });
    } catch (error) {
      print({ kind: "error", step, op: entry.op, error: { code: error.code, message: error.message, data: error.data } });
      if (entry.stop_on_error !== false) break;
    }
  }
});
child.stdin.end();
print({ kind: "exit", code: await exited });
