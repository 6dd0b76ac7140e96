// The Odradek console's page: plain JS, no framework, no network beyond this server.
// Views are chosen by the URL's hash (#/topics, #/topic/NAME, #/messages/NAME, #/groups,
// #/group/ID, #/transactions, #/brokers); the live ones re-render every POLL_MS.
"use strict";
const POLL_MS = 2000;
const PAGE = 100;  // partitions per page of the partitions table
const view = document.getElementById("view");
const statusLine = document.getElementById("status");
let timer = null;
let renderSeq = 0;

function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function enc(s) { return encodeURIComponent(s); }
function fmtBytes(n) {
  if (n === null || n === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}
function fmtTime(ms) { return ms < 0 ? "" : new Date(ms).toISOString().replace("T", " ").replace("Z", ""); }

async function api(path, options) {
  const t0 = performance.now();
  const r = await fetch(path, options);
  const doc = await r.json();
  statusLine.textContent = `${path.split("?")[0]}: ${(performance.now() - t0).toFixed(0)} ms`;
  statusLine.className = "";
  if (!r.ok) throw new Error(doc.error || r.statusText);
  return doc;
}

function showError(e) {
  statusLine.textContent = e.message;
  statusLine.className = "error";
}

function route() {
  const hash = location.hash.replace(/^#\/?/, "") || "topics";
  const [path, query] = hash.split("?");
  const parts = path.split("/").map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  return {name: parts[0], arg: parts[1], params};
}

async function render(live) {
  const seq = ++renderSeq;
  const r = route();
  document.querySelectorAll("header nav a").forEach(a => {
    a.classList.toggle("active", a.id === "nav-" + ({topic: "topics", messages: "topics", group: "groups"}[r.name] || r.name));
  });
  const fn = VIEWS[r.name];
  if (!fn) { view.innerHTML = `<p class="error">no page ${esc(r.name)}</p>`; return; }
  try {
    const html = await fn.render(r, live);
    if (seq !== renderSeq || html === null) return;  // a newer render started meanwhile
    view.innerHTML = html;
    if (fn.after) fn.after(r);
  } catch (e) {
    if (seq !== renderSeq) return;
    if (!live) view.innerHTML = `<p class="error" id="error">${esc(e.message)}</p>`;
    showError(e);
  }
}

function schedule() {
  clearTimeout(timer);
  const fn = VIEWS[route().name];
  // a hidden tab asks nothing of the broker; it redraws when shown again
  if (fn && fn.live) timer = setTimeout(async () => { if (!document.hidden) await render(true); schedule(); }, POLL_MS);
}

// ---- topics ---------------------------------------------------------------------------------

async function topicsView() {
  const doc = await api("/api/topics");
  const rows = doc.topics.map(t => `<tr><td><a href="#/topic/${enc(t.name)}">${esc(t.name)}</a></td>
    <td class="num">${t.partitions}</td><td><a href="#/messages/${enc(t.name)}">messages</a></td></tr>`).join("");
  return `<h2>Topics (${doc.topics.length})</h2>
    <table id="topics"><tr><th>Topic</th><th class="num">Partitions</th><th></th></tr>${rows}</table>`;
}

async function topicView(r) {
  const name = r.arg;
  const start = Number(r.params.get("start") || 0);
  const [doc, producers] = await Promise.all([
    api(`/api/topics/${enc(name)}?start=${start}&limit=${PAGE}`),
    api(`/api/topics/${enc(name)}/producers?start=${start}&limit=${PAGE}`)]);
  const rows = doc.partitions.map(p => `<tr data-partition="${p.partition}">
    <td class="num">${p.partition}</td><td class="num">${p.leader}</td>
    <td>${p.replicas.join(",")}</td><td>${p.isr.join(",")}</td>
    <td class="num log-start">${p.log_start}</td><td class="num hw">${p.high_watermark}</td>
    <td class="num lso">${p.last_stable}</td><td class="num">${p.messages}</td>
    <td class="num size">${fmtBytes(p.size)}</td>
    <td><a href="#/messages/${enc(name)}?partition=${p.partition}">browse</a></td></tr>`).join("");
  const last = Math.min(start + PAGE, doc.partition_count);
  const pager = `<div class="pager">partitions ${start}-${last - 1} of ${doc.partition_count}
    ${start > 0 ? `<a id="prev" href="#/topic/${enc(name)}?start=${Math.max(0, start - PAGE)}">previous</a>` : ""}
    ${last < doc.partition_count ? `<a id="next" href="#/topic/${enc(name)}?start=${last}">next</a>` : ""}</div>`;
  const prows = producers.producers.map(p => `<tr><td class="num">${p.partition}</td><td class="num">${p.producer_id}</td>
    <td class="num">${p.producer_epoch}</td><td class="num">${p.last_sequence}</td><td>${fmtTime(p.last_timestamp)}</td>
    <td class="num">${p.txn_start_offset >= 0 ? p.txn_start_offset : ""}</td></tr>`).join("");
  return `<h2>Topic ${esc(name)}</h2>
    <p>id ${esc(doc.topic_id)} · <a href="#/messages/${enc(name)}">browse messages</a> ·
       <a href="#/topicconfigs/${enc(name)}">configs</a></p>
    ${pager}
    <table id="partitions"><tr><th class="num">Partition</th><th class="num">Leader</th><th>Replicas</th><th>ISR</th>
      <th class="num">Log start</th><th class="num">High watermark</th><th class="num">LSO</th>
      <th class="num">Messages</th><th class="num">Size</th><th></th></tr>${rows}</table>
    <h3>Active producers (partitions of this page)</h3>
    <table id="producers"><tr><th class="num">Partition</th><th class="num">Producer id</th><th class="num">Epoch</th>
      <th class="num">Last sequence</th><th>Last write</th><th class="num">Open transaction from</th></tr>${prows}</table>`;
}

function configTable(configs) {
  const rows = configs.map(c => `<tr><td>${esc(c.name)}</td><td>${c.sensitive ? "<i>sensitive</i>" : esc(c.value ?? "")}</td>
    <td>${esc(c.source)}</td><td>${c.read_only ? "read-only" : ""}</td></tr>`).join("");
  return `<table class="configs"><tr><th>Name</th><th>Value</th><th>Source</th><th></th></tr>${rows}</table>`;
}

async function topicConfigsView(r) {
  const doc = await api(`/api/topics/${enc(r.arg)}/configs`);
  return `<h2>Configs of topic <a href="#/topic/${enc(r.arg)}">${esc(r.arg)}</a></h2>${configTable(doc.configs)}`;
}

// ---- messages -------------------------------------------------------------------------------

function bytesOf(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
function showBytes(v, format) {
  if (v === null) return `<span class="muted">null</span>`;
  if (format === "hex" || (v.text === null && format !== "hex")) {
    const hex = Array.from(bytesOf(v.b64), b => b.toString(16).padStart(2, "0")).join(" ");
    return `<pre class="hex">${hex}</pre>`;
  }
  if (format === "json") {
    try { return `<pre class="json">${esc(JSON.stringify(JSON.parse(v.text), null, 2))}</pre>`; }
    catch (e) { /* not JSON: as text */ }
  }
  return `<pre class="text">${esc(v.text)}</pre>`;
}

async function messagesView(r) {
  const name = r.arg;
  const p = r.params;
  const partition = p.get("partition") || "0";
  const limit = p.get("limit") || "50";
  const format = p.get("format") || "text";
  const q = new URLSearchParams({partition, limit});
  if (p.get("offset")) q.set("offset", p.get("offset"));
  if (p.get("timestamp")) q.set("timestamp", p.get("timestamp"));
  if (p.get("isolation")) q.set("isolation", p.get("isolation"));
  const doc = await api(`/api/topics/${enc(name)}/messages?${q}`);
  const link = (offset) => {
    const n = new URLSearchParams({partition, limit, format, offset});
    if (p.get("isolation")) n.set("isolation", p.get("isolation"));
    return `#/messages/${enc(name)}?${n}`;
  };
  const rows = doc.records.map(m => `<tr class="record" data-offset="${m.offset}">
    <td class="num">${m.offset}</td><td>${fmtTime(m.timestamp)}</td>
    <td class="key">${showBytes(m.key, format)}</td><td class="value">${showBytes(m.value, format)}</td>
    <td class="headers">${m.headers.map(h => `${esc(h.key)}: ${showBytes(h.value, format)}`).join("")}</td></tr>`).join("");
  const sel = (v, cur) => v === cur ? "selected" : "";
  return `<h2>Messages of <a href="#/topic/${enc(name)}">${esc(name)}</a>, partition ${doc.partition}</h2>
    <p>log start ${doc.log_start} · high watermark ${doc.high_watermark} · LSO ${doc.last_stable}</p>
    <form id="search">
      <label>Partition<input name="partition" type="number" min="0" value="${esc(partition)}"></label>
      <label>From offset<input name="offset" type="number" min="0" value="${esc(p.get("offset") || "")}"></label>
      <label>or from time (ms or ISO)<input name="timestamp" value="${esc(p.get("timestamp") || "")}"></label>
      <label>Per page<input name="limit" type="number" min="1" max="500" value="${esc(limit)}"></label>
      <label>Show as<select name="format"><option ${sel("text", format)}>text</option><option ${sel("json", format)}>json</option><option ${sel("hex", format)}>hex</option></select></label>
      <label>Isolation<select name="isolation"><option value="">uncommitted</option><option value="committed" ${sel("committed", p.get("isolation") || "")}>committed</option></select></label>
      <button>Show</button>
    </form>
    <div class="pager">
      ${doc.prev_offset !== null ? `<a id="prev" href="${link(doc.prev_offset)}">previous</a>` : ""}
      <span>offsets ${doc.offset}-${doc.next_offset - 1} (${doc.records.length} records)</span>
      ${doc.next_offset < (p.get("isolation") === "committed" ? doc.last_stable : doc.high_watermark) ? `<a id="next" href="${link(doc.next_offset)}">next</a>` : ""}
    </div>
    <table id="messages"><tr><th class="num">Offset</th><th>Timestamp</th><th>Key</th><th>Value</th><th>Headers</th></tr>${rows}</table>
    <h3>Produce a message</h3>
    <form id="produce">
      <label>Partition (empty: by key)<input name="partition" type="number" min="0"></label>
      <label>Key<input name="key"></label>
      <label>Value<textarea name="value"></textarea></label>
      <label>Headers (key=value per line)<textarea name="headers"></textarea></label>
      <button id="produce-button">Produce</button>
      <span id="produced"></span>
    </form>`;
}

function messagesAfter(r) {
  const name = r.arg;
  document.getElementById("search").addEventListener("submit", ev => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    const q = new URLSearchParams();
    for (const [k, v] of f.entries()) if (v !== "") q.set(k, v);
    const ts = q.get("timestamp");
    if (ts && !/^\d+$/.test(ts)) {
      const ms = Date.parse(ts);
      if (isNaN(ms)) { showError(new Error(`not a time: ${ts}`)); return; }
      q.set("timestamp", String(ms));
    }
    if (ts) q.delete("offset");
    location.hash = `#/messages/${enc(name)}?${q}`;
  });
  document.getElementById("produce").addEventListener("submit", async ev => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    const headers = String(f.get("headers") || "").split("\n").filter(l => l.trim()).map(l => {
      const i = l.indexOf("=");
      return i < 0 ? [l, null] : [l.slice(0, i), l.slice(i + 1)];
    });
    const body = {key: f.get("key") || null, value: f.get("value"), headers,
                  partition: f.get("partition") === "" ? null : Number(f.get("partition"))};
    try {
      const doc = await api(`/api/topics/${enc(name)}/produce`,
                            {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
      const q = new URLSearchParams(r.params);
      q.set("partition", doc.partition);
      q.set("offset", doc.offset);
      q.delete("timestamp");
      location.hash = `#/messages/${enc(name)}?${q}`;
      statusLine.textContent = `produced to partition ${doc.partition} at offset ${doc.offset}`;
    } catch (e) {
      document.getElementById("produced").innerHTML = `<span class="error">${esc(e.message)}</span>`;
    }
  });
}

// ---- groups ---------------------------------------------------------------------------------

async function groupsView() {
  const doc = await api("/api/groups");
  const rows = doc.groups.map(g => `<tr><td><a href="#/group/${enc(g.group_id)}">${esc(g.group_id)}</a></td>
    <td>${esc(g.state)}</td><td>${esc(g.type)}</td><td class="num lag">${g.lag ?? ""}</td></tr>`).join("");
  return `<h2>Consumer groups (${doc.groups.length})</h2>
    <table id="groups"><tr><th>Group</th><th>State</th><th>Type</th><th class="num">Lag</th></tr>${rows}</table>`;
}

function sparkline(points) {
  const w = 360, h = 60;
  if (points.length < 2) return `<svg class="spark" id="lag-chart" width="${w}" height="${h}"><text x="8" y="34" fill="#888">collecting lag samples…</text></svg>`;
  const t0 = points[0][0], t1 = points[points.length - 1][0] || t0 + 1;
  const max = Math.max(1, ...points.map(p => p[1]));
  const xy = points.map(([t, v]) => `${(((t - t0) / Math.max(1, t1 - t0)) * (w - 4) + 2).toFixed(1)},${(h - 2 - (v / max) * (h - 14)).toFixed(1)}`);
  return `<svg class="spark" id="lag-chart" width="${w}" height="${h}" data-points="${points.length}">
    <polyline fill="none" stroke="#2a6" stroke-width="1.5" points="${xy.join(" ")}"/>
    <text x="4" y="11" font-size="10" fill="#555">max ${max}</text></svg>`;
}

async function groupView(r) {
  const g = await api(`/api/groups/${enc(r.arg)}`);
  const members = g.members.map(m => `<tr><td>${esc(m.member_id)}</td><td>${esc(m.client_id)}</td><td>${esc(m.client_host)}</td>
    <td>${Object.entries(m.assignment).map(([t, ps]) => `${esc(t)}: ${ps.join(",")}`).join("<br>")}</td></tr>`).join("");
  // the offsets table is paged like the partitions table: a group may hold thousands
  const start = Number(r.params.get("start") || 0);
  const shown = g.offsets.slice(start, start + PAGE);
  const last = start + shown.length;
  const base = `#/group/${enc(g.group_id)}?start=`;
  const pager = g.offsets.length <= PAGE ? "" : `<div class="pager">partitions ${start + 1}-${last} of ${g.offsets.length}
    ${start > 0 ? `<a id="prev" href="${base}${Math.max(0, start - PAGE)}">previous</a>` : ""}
    ${last < g.offsets.length ? `<a id="next" href="${base}${last}">next</a>` : ""}</div>`;
  const offsets = shown.map(o => `<tr data-topic="${esc(o.topic)}" data-partition="${o.partition}"><td>${esc(o.topic)}</td><td class="num">${o.partition}</td>
    <td class="num committed">${o.committed >= 0 ? o.committed : ""}</td><td class="num end">${o.end}</td>
    <td class="num lag">${o.lag ?? ""}</td><td>${esc(o.member ?? "")}</td></tr>`).join("");
  return `<h2>Group ${esc(g.group_id)}</h2>
    <p>state <span id="group-state">${esc(g.state)}</span> · ${esc(g.type)} · protocol ${esc(g.protocol)} · coordinator ${g.coordinator}
      · total lag <strong id="total-lag">${g.lag}</strong></p>
    ${sparkline(g.history)}
    <h3>Members (${g.members.length})</h3>
    <table id="members"><tr><th>Member</th><th>Client</th><th>Host</th><th>Assignment</th></tr>${members}</table>
    <h3>Offsets</h3>${pager}
    <table id="offsets"><tr><th>Topic</th><th class="num">Partition</th><th class="num">Committed</th>
      <th class="num">End</th><th class="num">Lag</th><th>Member</th></tr>${offsets}</table>`;
}

// ---- transactions, brokers ------------------------------------------------------------------

async function transactionsView() {
  const doc = await api("/api/transactions");
  const rows = doc.transactions.map(t => `<tr data-id="${esc(t.transactional_id)}"><td>${esc(t.transactional_id)}</td>
    <td class="state">${esc(t.state)}</td><td class="num">${t.producer_id}</td><td class="num">${t.producer_epoch}</td>
    <td class="num">${t.timeout_ms}</td><td>${t.start_time_ms > 0 ? fmtTime(t.start_time_ms) : ""}</td>
    <td>${Object.entries(t.partitions).map(([n, ps]) => `${esc(n)}: ${ps.join(",")}`).join("<br>")}</td></tr>`).join("");
  return `<h2>Transactions (${doc.transactions.length})</h2>
    <table id="transactions"><tr><th>Transactional id</th><th>State</th><th class="num">Producer id</th><th class="num">Epoch</th>
      <th class="num">Timeout ms</th><th>Started</th><th>Partitions</th></tr>${rows}</table>
    <p class="muted">Producers per partition (DescribeProducers) are on each topic's page.</p>`;
}

async function brokersView(r) {
  const c = await api("/api/cluster");
  const rows = c.brokers.map(b => `<tr><td class="num">${b.node_id}${b.node_id === c.controller ? " (controller)" : ""}</td>
    <td>${esc(b.host)}:${b.port}</td><td>${esc(b.rack ?? "")}</td><td><a href="#/brokers/${b.node_id}">configs</a></td></tr>`).join("");
  let configs = "";
  if (r.arg !== undefined && r.arg !== "") {
    const doc = await api(`/api/brokers/${enc(r.arg)}/configs`);
    configs = `<h3>Configs of broker ${doc.node_id}</h3>${configTable(doc.configs)}`;
  }
  return `<h2>Cluster ${esc(c.cluster_id ?? "")}</h2>
    <p>bootstrap ${esc(c.bootstrap)} · features ${esc(Object.entries(c.features).map(([k, v]) => k + "=" + v).join(", "))}</p>
    <table id="brokers"><tr><th class="num">Broker</th><th>Address</th><th>Rack</th><th></th></tr>${rows}</table>${configs}`;
}

const VIEWS = {
  topics: {render: topicsView, live: true},
  topic: {render: topicView, live: true},
  topicconfigs: {render: topicConfigsView},
  messages: {render: messagesView, after: messagesAfter},
  groups: {render: groupsView, live: true},
  group: {render: groupView, live: true},
  transactions: {render: transactionsView, live: true},
  brokers: {render: brokersView},
};

document.addEventListener("visibilitychange", () => { if (!document.hidden) render(true); });
window.addEventListener("hashchange", async () => { await render(false); schedule(); });
render(false).then(schedule);
