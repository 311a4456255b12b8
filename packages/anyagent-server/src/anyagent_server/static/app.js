// anyagent ui: the page speaks the sidecar protocol (docs/sidecar.md) on /ws and reads the thread
// list from /api/threads. Plain ES module, no build step.
import { render, esc } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };

// ---- the connection ----------------------------------------------------------------------------
let ws = null;
let nextId = 1;
const pending = new Map();
let connected = null;
const sessions = new Map(); // session id -> {info, status, usage}

function connect() {
  connected = new Promise((resolve) => {
    ws = new WebSocket(`ws://${location.host}/ws`, ["anyagent.v1"]);
    ws.onmessage = (m) => {
      const line = JSON.parse(m.data);
      if (line.hello) { resolve(); return; }
      onLine(line);
    };
    ws.onclose = () => {
      for (const p of pending.values()) p.reject({ kind: "Disconnected", message: "the connection to anyagent ui closed" });
      pending.clear();
      showError({ kind: "Disconnected", message: "connection lost; reload the page to reconnect" });
    };
  });
  return connected;
}

function call(cmd, fields = {}) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ id, cmd, ...fields }));
  });
}

function onLine(line) {
  if ("id" in line && (line.ok !== undefined || line.error !== undefined)) {
    const p = pending.get(line.id);
    pending.delete(line.id);
    if (!p) { if (line.error) showError(line.error); return; }
    if (line.error) p.reject(line.error); else p.resolve(line.ok);
    return;
  }
  if (line.event) { onEvent(line.event); return; }
  if (line.closed) { onClosed(line.closed); return; }
  if (line.session && line.error) { if (view && view.session === line.session) showError(line.error); }
}

// ---- errors ------------------------------------------------------------------------------------
function showError(error) {
  const box = $("error");
  box.hidden = false;
  box.replaceChildren(el("strong", null, error.kind || "Error"), document.createTextNode(`: ${error.message || ""}`));
  if (error.login) box.append(el("div", "hint", `Log in with: ${typeof error.login === "string" ? error.login : JSON.stringify(error.login)}`));
  const close = el("button", "link", "dismiss");
  close.type = "button";
  close.onclick = () => { box.hidden = true; };
  box.append(" ", close);
}

// ---- thread list -------------------------------------------------------------------------------
let threads = [];
const STATUS = { idle: "Idle", working: "Working", needs_input: "Needs input", failed: "Failed" };

async function loadThreads() {
  const q = $("search").value.trim();
  const res = await fetch(`/api/threads${q ? `?q=${encodeURIComponent(q)}` : ""}`);
  if (!res.ok) return;
  threads = (await res.json()).threads;
  renderThreads();
}

function ago(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}

function renderThreads() {
  const list = $("threads");
  list.replaceChildren();
  for (const t of threads) {
    const live = t.session && sessions.get(t.session);
    const status = live ? live.status : t.status;
    const li = el("li", "thread");
    const a = el("button", "thread-button");
    a.type = "button";
    a.dataset.thread = t.id;
    if (view && (view.thread === t.id || (t.session && view.session === t.session))) a.setAttribute("aria-current", "true");
    const top = el("div", "thread-top");
    top.append(el("span", "thread-title", t.title || "Untitled"), el("span", `badge ${status}`, STATUS[status] || status));
    const meta = el("div", "thread-meta", `${t.agent} · ${t.cwd || ""} · ${ago(t.updated_at)}`);
    a.append(top, meta);
    a.onclick = () => openThread(t);
    li.append(a);
    list.append(li);
  }
  if (!threads.length) list.append(el("li", "empty", $("search").value ? "No thread matches." : "No threads yet."));
}

// ---- the chat view -----------------------------------------------------------------------------
let view = null; // {session, thread, messages, tools, requests, queue, lastSeq}

function newView(session, thread) {
  view = { session, thread, messages: new Map(), reasoning: new Map(), tools: new Map(), requests: new Map(), queue: new Map(), turns: new Map(), lastSeq: 0, info: null, rollingBack: 0 };
  $("transcript").replaceChildren();
  $("queue").replaceChildren();
  $("delivery").textContent = "";
  $("error").hidden = true;
  document.body.classList.add("chatting");
  for (const id of ["composer", "cancel", "settings-button", "usage-button", "compact", "rollback"]) $(id).hidden = !session;
  if (session) sessionStorage.setItem("anyagent-ui-session", session); else sessionStorage.removeItem("anyagent-ui-session");
  renderThreads();
}

function setInfo(info) {
  view.info = info;
  const s = sessions.get(info.id) || { status: "idle" };
  s.info = info;
  sessions.set(info.id, s);
  $("chat-title").textContent = info.title || view.title || view.firstPrompt || `${info.agent.name} · new thread`;
  const features = new Set(((info.details && info.details.capabilities) || {}).features || []);
  view.features = features;
  $("compact").hidden = !features.has("Compact");
  $("rollback").hidden = !features.has("Rollback");
  setStatus(info.id, s.status);
}

function setStatus(session, status) {
  const s = sessions.get(session) || {};
  s.status = status;
  sessions.set(session, s);
  if (view && view.session === session) {
    const badge = $("chat-status");
    badge.hidden = false;
    badge.className = `badge ${status}`;
    badge.textContent = STATUS[status] || status;
    $("cancel").hidden = status === "idle" || status === "failed";
    $("compact").disabled = status !== "idle";
    $("rollback").disabled = status !== "idle" || !lastTurns(1).length;
  }
  renderThreads();
}

function scrollDown() {
  const t = $("transcript");
  if (t.scrollHeight - t.scrollTop - t.clientHeight < 200) t.scrollTop = t.scrollHeight;
}

// Each top-level turn renders into its own <section class="turn">; a subagent's events (those
// with turn_info.parent_tool_id) render inside the tool card that started it.
function container(event) {
  const info = event.turn_info;
  const parent = info && info.parent_tool_id;
  if (parent && view.tools.has(parent)) return view.tools.get(parent).nested;
  if (info && info.id) return turnSection(info.id);
  return $("transcript");
}

function turnSection(id) {
  let turn = view.turns.get(id);
  if (!turn) {
    const node = el("section", "turn");
    node.dataset.turn = id;
    turn = { id, node, prompt: null, ended: false, user: null };
    view.turns.set(id, turn);
    $("transcript").append(node);
  }
  return turn.node;
}

// A prompt sent before this page was loaded (a reload): its bubble, from the text the server gave.
function storedPrompt(promptId) {
  const text = view.prompts ? view.prompts[String(promptId)] : undefined;
  if (typeof text !== "string") return;
  delete view.prompts[String(promptId)];
  userMessage(text).dataset.prompt = promptId;
}

// The prompt's own bubble joins the turn it started (whichever of the two arrives first).
function joinPrompt(promptId) {
  const turn = [...view.turns.values()].find((t) => t.prompt === promptId);
  const bubble = $("transcript").querySelector(`.message.user[data-prompt="${CSS.escape(promptId)}"]`);
  if (turn && bubble && bubble.parentNode !== turn.node) { turn.node.prepend(bubble); turn.user = bubble; }
}

// The last n turns a rollback would rewind: ended prompt turns not rolled back yet, newest first.
function lastTurns(n) {
  if (!view) return [];
  return [...view.turns.values()].filter((t) => t.prompt && t.ended && !t.node.classList.contains("rolled-back")).reverse().slice(0, n);
}

function markRolledBack(n) {
  for (const turn of lastTurns(n)) {
    turn.node.classList.add("rolled-back");
    turn.node.setAttribute("aria-label", "Rolled back turn");
    turn.node.prepend(el("div", "note rolled-back-note", "Rolled back: the agent no longer remembers this turn"));
  }
  setStatus(view.session, (sessions.get(view.session) || {}).status || "idle");
}

function message(event, id) {
  let m = view.messages.get(id);
  if (!m) {
    const node = el("div", "message agent");
    m = { node, text: "", queued: false };
    view.messages.set(id, m);
    container(event).append(node);
  }
  return m;
}

function paint(m) {
  if (m.queued) return;
  m.queued = true;
  requestAnimationFrame(() => { m.queued = false; m.node.innerHTML = render(m.text); scrollDown(); });
}

function userMessage(text, where = $("transcript")) {
  const node = el("div", "message user");
  node.setAttribute("aria-label", "You");
  node.innerHTML = render(text);
  where.append(node);
  scrollDown();
  return node;
}

const TOOL_STATUS = { Pending: "pending", Running: "running", Completed: "done", Failed: "failed", Cancelled: "cancelled" };

function toolInput(tool) {
  const input = tool.input;
  if (input && typeof input === "object") {
    const [tag, body] = Object.entries(input)[0] || [];
    if (tag === "Command") return body.command;
    if (typeof body === "string") return body;
    if (body && typeof body === "object") return JSON.stringify(body, null, 1);
  }
  return tool.raw ? JSON.stringify(tool.raw.input ?? tool.raw, null, 1) : "";
}

function toolCard(event, tool) {
  let card = view.tools.get(tool.id);
  if (!card) {
    const node = el("details", "tool");
    node.dataset.tool = tool.id;
    const summary = el("summary");
    const kind = el("span", "tool-kind");
    const title = el("span", "tool-title");
    const status = el("span", "tool-status");
    summary.append(kind, title, status);
    const input = el("pre", "tool-input");
    const output = el("pre", "tool-output");
    const extra = el("div", "tool-extra");
    const nested = el("div", "tool-nested");
    nested.setAttribute("role", "group");
    nested.setAttribute("aria-label", `Subagent of ${tool.title}`);
    node.append(summary, input, extra, output, nested);
    card = { node, kind, title, status, input, output, extra, nested, streamed: "" };
    view.tools.set(tool.id, card);
    container(event).append(node);
  }
  card.kind.textContent = typeof tool.kind === "string" ? tool.kind : Object.keys(tool.kind || { Other: 1 })[0];
  card.node.classList.toggle("subagent", card.kind.textContent === "Subagent");
  card.title.textContent = tool.title;
  card.status.textContent = TOOL_STATUS[tool.status] || tool.status;
  card.status.className = `tool-status ${TOOL_STATUS[tool.status] || ""}`;
  const input = toolInput(tool);
  const diffed = new Set((tool.diffs || []).map((d) => d.path));
  card.input.textContent = input === tool.title || diffed.has(input) || (tool.locations || []).includes(input) ? "" : input;
  if (tool.output) card.output.textContent = tool.output;
  card.extra.replaceChildren();
  for (const loc of tool.locations || []) if (!diffed.has(loc)) card.extra.append(el("div", "location", loc));
  for (const d of tool.diffs || []) card.extra.append(diff(d));
  if (tool.status === "Running" || tool.status === "Failed" || (tool.diffs || []).length) card.node.open = true;
  scrollDown();
  return card;
}

function diff(d) {
  const box = el("div", "diff");
  box.append(el("div", "diff-path", d.path));
  const pre = el("pre");
  const old = (d.old_text || "").split("\n");
  const neu = (d.new_text || "").split("\n");
  for (const l of old) if (d.old_text !== null && !neu.includes(l)) pre.append(el("div", "del", `- ${l}`));
  for (const l of neu) pre.append(el("div", old.includes(l) ? "ctx" : "add", `${old.includes(l) ? " " : "+"} ${l}`));
  box.append(pre);
  return box;
}

function onEvent(event) {
  const session = event.session_id;
  const kind = typeof event.kind === "string" ? { [event.kind]: null } : event.kind;
  const [tag, body] = Object.entries(kind)[0];
  if (tag === "TurnStarted") setStatus(session, "working");
  else if (tag === "TurnEnded" && !(event.turn_info && event.turn_info.parent_tool_id)) { setStatus(session, "idle"); setTimeout(loadThreads, 400); }
  else if (tag === "RequestOpened") setStatus(session, "needs_input");
  else if (tag === "StatusChanged") setStatus(session, { Idle: "idle", Working: "working", NeedsInput: "needs_input" }[body] || "idle");
  else if (tag === "ContextUsage") { const s = sessions.get(session) || {}; s.usage = body; sessions.set(session, s); }
  if (!view || view.session !== session) return;
  if (event.sequence <= view.lastSeq) return; // never twice
  view.lastSeq = event.sequence;
  apply(event, tag, body);
  if (view.steers) placeSteers(event.sequence);
}

// A prompt steered into a running turn before this page was loaded (a reload): its bubble right
// after the event it followed, inside the turn that was running.
function placeSteers(sequence) {
  for (const [id, after] of Object.entries(view.steers)) {
    if (after > sequence) continue;
    delete view.steers[id];
    const text = view.prompts ? view.prompts[id] : undefined;
    if (typeof text !== "string") continue;
    delete view.prompts[id];
    const turns = [...view.turns.values()].reverse();
    const turn = turns.find((t) => !t.ended) || turns[0]; // (the turn may have ended as it joined)
    userMessage(text, turn ? turn.node : $("transcript")).dataset.prompt = id;
  }
}

function apply(event, tag, body) {
  if (tag === "TextDelta") { const m = message(event, body.message_id); m.text += body.text; paint(m); }
  else if (tag === "ReasoningDelta") {
    let r = view.reasoning.get(body.message_id);
    if (!r) {
      const node = el("details", "reasoning");
      node.append(el("summary", null, "Reasoning"));
      const text = el("div", "reasoning-text");
      node.append(text);
      r = { node: text, text: "", queued: false };
      view.reasoning.set(body.message_id, r);
      container(event).append(node);
    }
    r.text += body.text;
    paint(r);
  } else if (tag === "UserMessage") userMessage(body.text, container(event));
  else if (tag === "ToolUpdated") toolCard(event, body);
  else if (tag === "ToolOutputDelta") {
    const card = view.tools.get(body.tool_id);
    if (card) { card.output.textContent += body.text; scrollDown(); }
  } else if (tag === "TurnStarted") {
    const origin = body.origin;
    if (origin && origin.Prompt) dropQueued(origin.Prompt);
    const info = event.turn_info;
    if (info && info.id && !info.parent_tool_id) {
      turnSection(info.id);
      const turn = view.turns.get(info.id);
      turn.prompt = origin && origin.Prompt ? origin.Prompt : null;
      if (!turn.prompt) turn.node.classList.add("agent-turn");
      if (turn.prompt) { storedPrompt(turn.prompt); joinPrompt(turn.prompt); }
    }
  } else if (tag === "TurnEnded") {
    const info = event.turn_info;
    if (info && info.id && !info.parent_tool_id && view.turns.has(info.id)) view.turns.get(info.id).ended = true;
    const stop = typeof body.stop === "string" ? body.stop : Object.keys(body.stop)[0];
    if (stop !== "Completed") {
      const detail = typeof body.stop === "object" ? body.stop[stop] : null;
      container(event).append(el("div", `note stop ${stop}`, `Turn ${stop.toLowerCase()}${detail && detail.message ? `: ${detail.message}` : ""}`));
    }
  } else if (tag === "RequestOpened") openRequest(body);
  else if (tag === "RequestClosed") closeRequest(body.request_id);
  else if (tag === "SessionUpdated") {
    setInfo(body);
    if (view.rollingBack) { const n = view.rollingBack; view.rollingBack = 0; markRolledBack(n); }
  }
  else if (tag === "PlanUpdated") {
    const list = el("ul", "plan");
    for (const e of body.entries) list.append(el("li", `plan-${e.status}`, e.text));
    container(event).append(list);
  } else if (tag === "Diagnostic") {
    container(event).append(el("div", `note diagnostic ${body.level || ""}`, body.message));
    view.rollingBack = 0; // a refused rollback says so as a Diagnostic
  } else if (tag === "ContextCompacted") {
    const note = el("div", "note compacted", "Context compacted: older turns are summarized for the agent");
    note.setAttribute("role", "status");
    container(event).append(note);
  } else if (tag === "PlanUsageUpdated" && view.info) planUsage.set(view.info.agent.id, { usage: body });
}

function onClosed(session) {
  setStatus(session, "idle");
  if (view && view.session === session) {
    $("composer").hidden = true;
    $("cancel").hidden = true;
    $("transcript").append(el("div", "note", "Session closed"));
  }
}

// ---- requests ----------------------------------------------------------------------------------
function openRequest(body) {
  if (body.Permission) {
    const r = body.Permission;
    const dialog = $("permission-dialog");
    dialog.dataset.request = r.id;
    $("permission-title").textContent = `${r.tool.title}${r.detail ? ` — ${r.detail}` : ""}`;
    $("permission-input").textContent = toolInput(r.tool);
    const menu = $("permission-options");
    menu.replaceChildren();
    for (const option of r.options) {
      const b = el("button", option.startsWith("Allow") ? "allow" : "deny", option.replace(/([a-z])([A-Z])/g, "$1 $2"));
      b.type = "button";
      b.dataset.option = option;
      b.onclick = () => answer(r.id, { Permission: option }, dialog);
      menu.append(b);
    }
    view.requests.set(r.id, dialog);
    dialog.showModal();
    menu.querySelector("button")?.focus();
  } else if (body.Question) {
    const r = body.Question;
    const dialog = $("question-dialog");
    dialog.dataset.request = r.id;
    const box = $("questions");
    box.replaceChildren();
    for (const q of r.questions) {
      const fs = el("fieldset", "question");
      fs.dataset.question = q.id;
      fs.append(el("legend", null, q.header || "Question"), el("p", null, q.text));
      for (const c of q.choices) {
        const label = el("label", "choice");
        const input = el("input");
        input.type = q.multi_select ? "checkbox" : "radio";
        input.name = `q-${q.id}`;
        input.value = c.id;
        label.append(input, ` ${c.label}`);
        if (c.description) label.append(el("span", "hint", ` ${c.description}`));
        fs.append(label);
      }
      if (q.allows_free_text || !q.choices.length) {
        const t = el("input", "free-text");
        t.placeholder = "Your answer";
        t.setAttribute("aria-label", "Your answer");
        fs.append(t);
      }
      box.append(fs);
    }
    $("question-send").onclick = (e) => {
      e.preventDefault();
      const answers = [...box.querySelectorAll("fieldset.question")].map((fs) => {
        const free = fs.querySelector(".free-text");
        if (free && free.value.trim()) return { Text: free.value };
        return { Choices: [...fs.querySelectorAll("input:checked")].map((i) => i.value) };
      });
      answer(r.id, { Question: answers }, dialog);
    };
    view.requests.set(r.id, dialog);
    dialog.showModal();
  }
}

async function answer(request, value, dialog) {
  dialog.close();
  view.requests.delete(request);
  try { await call("answer", { session: view.session, request, answer: value }); } catch (e) { showError(e); }
}

function closeRequest(request) {
  const dialog = view.requests.get(request);
  if (dialog && dialog.dataset.request === request && dialog.open) dialog.close();
  view.requests.delete(request);
}

// ---- prompting ---------------------------------------------------------------------------------
function dropQueued(promptId) {
  const item = view.queue.get(promptId);
  if (item) { item.remove(); view.queue.delete(promptId); }
}

async function send(text) {
  if (!view.session && view.resumable && !(await continueThread())) return;
  const session = view.session;
  const bubble = userMessage(text);
  if (!view.firstPrompt && !view.title && !(view.info && view.info.title)) {
    view.firstPrompt = text.split("\n")[0].slice(0, 80);
    $("chat-title").textContent = view.firstPrompt;
  }
  setTimeout(loadThreads, 400); // the store has the prompt (and the thread its title) after its next write
  try {
    const delivery = await call("prompt", { session, text });
    const [kind, body] = Object.entries(delivery.kind)[0];
    if (view && view.session === session) {
      bubble.dataset.prompt = delivery.prompt_id;
      if (kind === "Steered") { // it joined the running turn: show it there
        const running = [...view.turns.values()].reverse().find((t) => !t.ended);
        if (running) running.node.append(bubble);
      } else joinPrompt(delivery.prompt_id);
    }
    $("delivery").textContent = kind === "Queued" ? `Queued, #${body.position + 1} in line` : kind === "Steered" ? "Steered into the running turn" : "Started a turn";
    $("delivery").dataset.kind = kind;
    if (kind === "Queued") {
      const li = el("li", "queued");
      li.dataset.prompt = delivery.prompt_id;
      li.append(el("span", null, text));
      const b = el("button", "link", "withdraw");
      b.type = "button";
      b.onclick = async () => {
        try { await call("dequeue", { session, prompt: delivery.prompt_id }); dropQueued(delivery.prompt_id); } catch (e) { showError(e); }
      };
      li.append(" ", b);
      $("queue").append(li);
      view.queue.set(delivery.prompt_id, li);
    }
  } catch (e) { showError(e); }
}

// ---- opening -----------------------------------------------------------------------------------
// A stored thread shows its history from the store. If it is live (a session records into it), the
// session's events follow (the server keeps the stored part to what came before that session, so
// nothing shows twice); else the first prompt continues it (POST .../continue: the store reopens it
// with the agent's resume token and the session records on into the same thread), or it is
// read-only with the typed reason the server gave.
async function openThread(t) {
  newView(null, t.id);
  view.title = t.title;
  $("chat-title").textContent = t.title || "Untitled";
  $("chat-status").hidden = true;
  const res = await fetch(`/api/threads/${encodeURIComponent(t.id)}/events`);
  if (!res.ok) { showError({ kind: "StoreError", message: await res.text() }); return; }
  const data = await res.json();
  if (!view || view.thread !== t.id) return; // another thread was opened meanwhile
  for (const event of data.events) {
    const kind = typeof event.kind === "string" ? { [event.kind]: null } : event.kind;
    const [tag, body] = Object.entries(kind)[0];
    if (tag === "RequestOpened" || tag === "RequestClosed") continue;
    apply(event, tag, body);
  }
  // the seam: what follows is another session's (an agent may reuse message ids across sessions)
  // (and turn ids are counted afresh in each session)
  view.messages = new Map(); view.reasoning = new Map(); view.tools = new Map(); view.turns = new Map();
  if (data.thread.session) {
    view.prompts = data.prompts || {}; // sent before this page: shown at their turn's start
    view.steers = data.steers || {}; // ...or, steered into a running turn, after the event they followed
    await attach(data.thread.session, t.id, true);
    return;
  }
  if (data.resume) { readOnly(data.resume); return; }
  view.resumable = true;
  $("composer").hidden = false;
  $("transcript").append(el("div", "note seam", "Stored thread: a prompt continues it"));
}

function readOnly(error) {
  view.resumable = false;
  $("composer").hidden = true;
  $("transcript").append(el("div", "note read-only", `Read-only: ${error.kind}: ${error.message}`));
  handoffOffer(view.thread).catch(showError);
}

// Continue on another agent (the store's hand-off): a new thread, linked to this one, whose first
// prompt carries the conversation so far.
async function handoffOffer(thread) {
  const agents = (await call("discover")).agents;
  if (!agents.length || !view || view.thread !== thread) return;
  const form = el("form", "handoff");
  const pick = el("select");
  pick.setAttribute("aria-label", "Agent to continue on");
  for (const a of agents) { const o = el("option", null, a.name); o.value = a.id; pick.append(o); }
  const go = el("button", null, "Continue on another agent");
  go.type = "submit";
  form.append(pick, " ", go);
  form.onsubmit = async (e) => {
    e.preventDefault();
    go.disabled = true;
    const res = await fetch(`/api/threads/${encodeURIComponent(thread)}/handoff`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: pick.value }),
    });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) { go.disabled = false; showError(data.error || { kind: "Error", message: `HTTP ${res.status}` }); return; }
    const title = view && view.title;
    await attach(data.session, data.thread);
    view.title = title;
    $("transcript").append(el("div", "note handoff", `Continued from “${title || "Untitled"}”: the agent was sent the conversation so far`));
    loadThreads();
  };
  $("transcript").append(form);
}

async function continueThread() {
  const thread = view.thread;
  const res = await fetch(`/api/threads/${encodeURIComponent(thread)}/continue`, { method: "POST" });
  const data = await res.json().catch(() => ({}));
  if (!view || view.thread !== thread) return false;
  if (!res.ok) {
    const error = data.error || { kind: "Error", message: `HTTP ${res.status}` };
    readOnly(error);
    showError(error);
    return false;
  }
  if (!(await attach(data.session, thread, true))) return false;
  loadThreads();
  return true;
}

async function attach(session, thread, keep = false) {
  if (keep) { // the view keeps the stored history; the session's events follow it
    view.session = session;
    view.resumable = false;
    for (const id of ["composer", "settings-button", "usage-button"]) $(id).hidden = false;
    sessionStorage.setItem("anyagent-ui-session", session);
    renderThreads();
  } else newView(session, thread);
  try { setInfo(await call("attach", { session })); return true; } catch (e) {
    sessionStorage.removeItem("anyagent-ui-session");
    showError(e);
    return false;
  }
}

let discovery = null;
async function newThread() {
  const dialog = $("new-dialog");
  const list = $("agent-list");
  list.replaceChildren(el("legend", null, "Agent"));
  discovery = await call("discover");
  discovery.agents.forEach((a, i) => {
    const label = el("label", "agent");
    const input = el("input");
    input.type = "radio";
    input.name = "agent";
    input.value = a.id;
    input.checked = i === 0;
    label.append(input, ` ${a.name}`, el("span", "hint", ` ${a.version || ""}`));
    list.append(label);
  });
  for (const m of discovery.missing) {
    const row = el("div", "agent missing");
    row.append(el("span", null, m.name), el("code", "hint", m.install_hint || "not installed"));
    list.append(row);
  }
  if (!$("new-dir").value) $("new-dir").value = localStorage.getItem("anyagent-ui-dir") || "";
  dialog.showModal();
}

$("new-form").addEventListener("submit", async (e) => {
  if (e.submitter && e.submitter.value === "cancel") return;
  const agent = new FormData($("new-form")).get("agent");
  const dir = $("new-dir").value.trim();
  if (!agent || !dir) return;
  localStorage.setItem("anyagent-ui-dir", dir);
  try {
    const info = await call("open", { agent, dir, permission_mode: $("new-mode").value });
    newView(info.id, null);
    setInfo(info);
    $("prompt").focus();
    loadThreads();
  } catch (err) { showError(err); }
});

// ---- settings and usage ------------------------------------------------------------------------
function openSettings() {
  const box = $("settings");
  box.replaceChildren();
  const info = view.info;
  const current = (info.configuration && info.configuration.options) || {};
  for (const o of info.details.config_options) {
    const row = el("label", "setting");
    row.append(el("span", "setting-name", o.name));
    let control;
    if (o.kind === "Boolean") {
      control = el("input");
      control.type = "checkbox";
      control.checked = Boolean(current[o.id] ?? o.current);
    } else {
      control = el("select");
      for (const c of o.kind.Select.choices) {
        const opt = el("option", null, c.label);
        opt.value = c.value;
        control.append(opt);
      }
      control.value = current[o.id] ?? o.current ?? "";
    }
    control.dataset.option = o.id;
    const note = el("span", "hint", o.live ? "live" : "applies at next open");
    control.onchange = async () => {
      const value = o.kind === "Boolean" ? control.checked : control.value;
      try {
        await call("configure", { session: view.session, option: o.id, value });
        note.textContent = o.live ? "applied" : "applies at next open";
        setInfo(await call("info", { session: view.session }));
      } catch (err) { note.textContent = `${err.kind}: ${err.message}`; note.className = "hint error"; }
    };
    row.append(control, note);
    box.append(row);
  }
  if (!info.details.config_options.length) box.append(el("p", null, "This agent offers no settings."));
  $("settings-dialog").showModal();
}

const planUsage = new Map(); // agent id -> {usage} | {error}, from plan_usage or PlanUsageUpdated

// The usage dialog: this thread's context window, then every installed agent's plan windows as a
// small bar chart (used share, reset time); an agent without plan usage says so.
async function openUsage() {
  const box = $("usage");
  box.replaceChildren();
  const s = view && view.session ? sessions.get(view.session) || {} : null;
  const u = s && s.usage;
  box.append(el("h3", null, "Context"));
  if (!s) box.append(el("p", "hint", "Open a thread to see its context window."));
  else if (u && u.window_tokens) {
    box.append(bar(`${u.used_tokens.toLocaleString()} of ${u.window_tokens.toLocaleString()} tokens`, (100 * u.used_tokens) / u.window_tokens));
  } else box.append(el("p", null, u ? `${u.used_tokens} tokens` : "No usage reported yet."));
  if (u && u.cost_usd != null) box.append(el("p", null, `Cost: $${u.cost_usd.toFixed(4)}`));
  box.append(el("h3", null, "Plan"));
  const plans = el("div", "plans");
  plans.append(el("p", "hint", "Asking the agents…"));
  box.append(plans);
  $("usage-dialog").showModal();
  try {
    if (!discovery) discovery = await call("discover");
    const agents = [...discovery.agents];
    const current = view && view.info ? view.info.agent.id : null;
    agents.sort((a, b) => (b.id === current) - (a.id === current));
    await Promise.all(agents.map(async (a) => {
      try { planUsage.set(a.id, { usage: await call("plan_usage", { agent: a.id }) }); } catch (err) { planUsage.set(a.id, { error: err }); }
    }));
    plans.replaceChildren(...agents.map((a) => planCard(a, planUsage.get(a.id))));
    if (!agents.length) plans.replaceChildren(el("p", null, "No agents installed."));
  } catch (err) { plans.replaceChildren(el("p", "hint", `${err.kind}: ${err.message}`)); }
}

const secs = (t) => (t ? t.secs_since_epoch * 1000 + Math.floor((t.nanos_since_epoch || 0) / 1e6) : 0);

function untilText(ms) {
  const m = Math.max(0, Math.round(ms / 60000));
  if (m < 60) return `${m} min`;
  if (m < 48 * 60) return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
  return `${Math.round(m / 1440)} days`;
}

function planCard(agent, entry) {
  const card = el("section", "plan-card");
  card.dataset.agent = agent.id;
  const head = el("div", "plan-head");
  head.append(el("strong", null, agent.name));
  if (entry && entry.usage && entry.usage.plan) head.append(el("span", "badge plan-name", entry.usage.plan));
  card.append(head);
  if (!entry || entry.error) {
    const e = entry ? entry.error : {};
    const unsupported = e.kind === "UnsupportedFeature";
    card.append(el("p", "hint plan-none", unsupported ? `No plan usage: ${e.message}` : `Plan usage unavailable — ${e.kind}: ${e.message}`));
    return card;
  }
  const windows = entry.usage.windows || [];
  if (!windows.length) { card.append(el("p", "hint plan-none", "No plan windows reported.")); return card; }
  const chart = el("div", "plan-chart");
  chart.setAttribute("role", "list");
  for (const w of windows) {
    const pct = Math.min(100, Math.max(0, w.used_percent_exact ?? w.used_percent));
    const row = el("div", "plan-window");
    row.setAttribute("role", "listitem");
    row.append(el("span", "plan-label", w.label));
    const track = el("div", "usage-track");
    track.setAttribute("role", "meter");
    track.setAttribute("aria-label", `${agent.name} ${w.label}`);
    track.setAttribute("aria-valuemin", "0");
    track.setAttribute("aria-valuemax", "100");
    track.setAttribute("aria-valuenow", String(Math.round(pct)));
    const fill = el("div", `usage-fill${pct >= 90 ? " high" : pct >= 70 ? " mid" : ""}`);
    fill.style.width = `${pct}%`;
    track.append(fill);
    row.append(track, el("span", "plan-percent", `${Math.round(pct)}%`));
    const at = secs(w.resets_at);
    const reset = el("span", "plan-reset", at ? `resets in ${untilText(at - Date.now())} · ${new Date(at).toLocaleString([], { weekday: "short", hour: "2-digit", minute: "2-digit" })}` : "no reset time");
    if (at) { reset.dataset.resetsAt = new Date(at).toISOString(); reset.title = new Date(at).toLocaleString(); }
    row.append(reset);
    chart.append(row);
  }
  card.append(chart);
  return card;
}

function bar(label, percent) {
  const row = el("div", "usage-row");
  row.append(el("div", "usage-label", `${label} (${Math.round(percent)}%)`));
  const track = el("div", "usage-track");
  track.setAttribute("role", "meter");
  track.setAttribute("aria-label", "Context window");
  track.setAttribute("aria-valuemin", "0");
  track.setAttribute("aria-valuemax", "100");
  track.setAttribute("aria-valuenow", String(Math.round(percent)));
  const fill = el("div", "usage-fill");
  fill.style.width = `${Math.min(100, Math.max(0, percent))}%`;
  track.append(fill);
  row.append(track);
  return row;
}

// ---- wiring ------------------------------------------------------------------------------------
$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("prompt").value;
  if (!text.trim() || !view || !(view.session || view.resumable)) return;
  $("prompt").value = "";
  send(text);
});
$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
});
$("cancel").onclick = async () => { try { await call("cancel", { session: view.session }); } catch (e) { showError(e); } };
$("compact").onclick = async () => { try { await call("compact", { session: view.session }); } catch (e) { showError(e); } };
// Confirmed by SessionUpdated (the last turn is then marked); a refusal arrives as a Diagnostic.
$("rollback").onclick = async () => {
  view.rollingBack = 1;
  try { await call("rollback", { session: view.session, turns: 1 }); } catch (e) { view.rollingBack = 0; showError(e); }
};
$("settings-button").onclick = openSettings;
$("usage-button").onclick = openUsage;
$("plan-button").onclick = openUsage;
$("new-thread").onclick = () => newThread().catch(showError);
$("back").onclick = () => document.body.classList.remove("chatting");
let searchTimer = 0;
$("search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(loadThreads, 150); });
document.addEventListener("keydown", (e) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (e.key === "Escape" && view && view.session && !document.querySelector("dialog[open]")) $("cancel").click();
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === "/") { e.preventDefault(); $("search").focus(); }
  if (e.key === "n") { e.preventDefault(); $("new-thread").click(); }
  if (e.key === "u" && !document.querySelector("dialog[open]")) { e.preventDefault(); openUsage(); }
});

(async () => {
  await connect();
  await loadThreads();
  setInterval(loadThreads, 2000);
  const session = sessionStorage.getItem("anyagent-ui-session");
  const live = session && threads.find((t) => t.session === session);
  if (live) await openThread(live); // its stored history first, then the session's events
  else if (session) await attach(session, null);
})();
