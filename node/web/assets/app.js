// Zorilla's web view: hand-written, no framework. Each page fetches the
// JSON routes of the view (GET only) and draws with DOM and SVG.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
let timer = null;     // the current page's refresh timer
let source = null;    // the current page's event stream

function el(tag, attrs, ...kids) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k !== undefined && k !== null) e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

async function get(path) {
  const r = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || r.status + " " + r.statusText);
  return body;
}

const short = (id) => (id ? id.slice(0, 4) + "…" + id.slice(-6) : "");
const ms = (ns) => (ns / 1e6).toFixed(ns < 1e7 ? 2 : 0) + " ms";
const when = (t) => (t ? new Date(t).toLocaleString() : "");
const dur = (a, b) => {
  if (!a || !b) return "";
  const s = (new Date(b) - new Date(a)) / 1000;
  return s < 120 ? s.toFixed(1) + " s" : (s / 60).toFixed(1) + " min";
};
const nxr = (d) => `${d.nodes} x ${d.replicas || 1}`;
const final = (st) => st === "done" || st === "failed" || st === "cancelled" || st === "stopped";

function show(...kids) {
  const m = document.getElementById("main");
  m.replaceChildren(...kids);
}

function fail(err) {
  show(el("p", { class: "err" }, "Could not load: " + err.message));
}

// ---- Network page --------------------------------------------------------

async function networkPage() {
  const g = await get("/api/graph");
  const groups = [...new Set(g.nodes.map((n) => n.group))].sort();
  const nodes = [...g.nodes].sort((a, b) => (a.group + a.id).localeCompare(b.group + b.id));
  const W = 760, H = 560, cx = W / 2, cy = H / 2, R = Math.min(W, H) / 2 - 70;
  const pos = {};
  // Nodes around a circle, each group on an arc of its own with a gap
  // between groups.
  const gap = groups.length > 1 ? 1 : 0, slots = nodes.length + gap * groups.length;
  let i = 0, last = null;
  for (const n of nodes) {
    if (n.group !== last && last !== null) i += gap;
    last = n.group;
    const a = (2 * Math.PI * i) / Math.max(slots, 1) - Math.PI / 2;
    pos[n.id] = [cx + R * Math.cos(a), cy + R * Math.sin(a), a];
    i++;
  }
  const palette = ["#90caf9", "#a5d6a7", "#ffcc80", "#ce93d8", "#80cbc4", "#ef9a9a", "#e6ee9c", "#bcaaa4"];
  const colour = (grp) => palette[groups.indexOf(grp) % palette.length];
  const svg = el("svg:svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: "graph" });
  for (const e of g.edges) {
    const [x1, y1] = pos[e.a], [x2, y2] = pos[e.b];
    const cls = "edge" + (e.dead ? " dead" : "") + (e.conn === "relayed" ? " relayed" : "");
    svg.append(el("svg:line", { class: cls, x1, y1, x2, y2, "data-a": e.a, "data-b": e.b }));
    if (e.rtt_ms > 0) {
      svg.append(el("svg:text", { class: "rtt", x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 3, "text-anchor": "middle" },
        e.rtt_ms.toFixed(e.rtt_ms < 10 ? 2 : 0) + " ms"));
    }
  }
  for (const n of nodes) {
    const [x, y, a] = pos[n.id];
    const cls = "node" + (n.self ? " self" : "") + (n.dead ? " dead" : "");
    const lx = x + 22 * Math.cos(a), ly = y + 22 * Math.sin(a) + 4;
    svg.append(el("svg:g", { class: cls, "data-id": n.id },
      el("svg:title", {}, n.id + (n.labels && n.labels.length ? "\n" + n.labels.join(", ") : "") + "\n" + n.group),
      el("svg:circle", { cx: x, cy: y, r: n.self ? 11 : 9, fill: colour(n.group) }),
      el("svg:text", { x: lx, y: ly, "text-anchor": Math.cos(a) < -0.2 ? "end" : Math.cos(a) > 0.2 ? "start" : "middle" },
        short(n.id) + (n.self ? " (this agent)" : ""))));
  }
  const legend = el("p", { class: "legend" },
    groups.map((grp) => el("span", {}, el("svg:svg", { width: 12, height: 12 }, el("svg:circle", { cx: 6, cy: 6, r: 5, fill: colour(grp) })), " " + grp)),
    el("span", { class: "muted" }, "grey: dead · dashed: relayed · edges: neighbour links with RTT"));
  const rows = g.nodes.map((n) => el("tr", {}, el("td", { class: "mono" }, n.id), el("td", {}, n.group),
    el("td", {}, n.self ? "this agent" : n.dead ? "dead" : n.direct ? "connected" : ""), el("td", {}, (n.labels || []).join(", "))));
  show(el("h2", {}, "Network"),
    el("p", { class: "muted", id: "counts" }, `${g.nodes.length} agents, ${g.edges.length} links: this agent, the peers it knows, and its neighbours' neighbours`),
    svg, legend,
    el("table", {}, el("tr", {}, el("th", {}, "agent"), el("th", {}, "group"), el("th", {}, "state"), el("th", {}, "labels")), rows));
  timer = setTimeout(route, 5000);
}

// ---- Jobs pages ----------------------------------------------------------

async function jobsPage() {
  const jobs = await get("/api/jobs");
  jobs.sort((a, b) => new Date(b.created) - new Date(a.created));
  const rows = jobs.map((j) => el("tr", { class: "job", "data-id": j.id },
    el("td", { class: "mono" }, el("a", { href: "#/jobs/" + encodeURIComponent(j.id) }, j.id)),
    el("td", { class: "state-" + j.state }, j.state),
    el("td", {}, nxr(j.desc)),
    el("td", {}, j.desc.strategy || "spread"),
    el("td", {}, when(j.created)),
    el("td", {}, final(j.state) ? dur(j.created, j.updated) : dur(j.created, new Date().toISOString())),
    el("td", {}, final(j.state) ? String(j.exit || 0) : "")));
  show(el("h2", {}, "Jobs submitted here"),
    jobs.length ? el("table", { id: "jobs" },
      el("tr", {}, ["id", "state", "n x r", "strategy", "submitted", "duration", "exit"].map((h) => el("th", {}, h))), rows)
      : el("p", { class: "muted" }, "No job yet: zorilla submit -n 4 ./prog"));
  timer = setTimeout(route, 5000);
}

async function jobPage(id) {
  const [rec, graph, outs] = await Promise.all([
    get("/api/jobs/" + encodeURIComponent(id)),
    get("/api/graph").catch(() => ({ nodes: [] })),
    get("/api/jobs/" + encodeURIComponent(id) + "/outputs").catch(() => []),
  ]);
  const group = {};
  for (const n of graph.nodes) group[n.id] = n.group;
  const out = el("pre", { id: "output" });
  const chart = el("div", { id: "flood" });
  const head = el("p", { id: "summary" });
  const drawHead = (r) => head.replaceChildren(
    el("span", { class: "state-" + r.state, id: "state" }, r.state), ` · ${nxr(r.desc)} ${r.desc.strategy || "spread"}`,
    ` · ${r.desc.executable || ""}`, r.reason ? el("span", { class: "err" }, " · " + r.reason) : "",
    final(r.state) ? ` · exit ${r.exit || 0}` : "");
  drawHead(rec);
  const samples = [...(rec.flood || [])];
  chart.replaceChildren(floodChart(samples));
  show(el("h2", {}, "Job ", el("span", { class: "mono" }, rec.id)), head,
    el("h3", {}, "Placement"), placement(rec, group),
    el("h3", {}, "Timeline"), timeline(rec),
    el("h3", {}, "Flood"), chart,
    el("h3", {}, "Failures and retries"), failures(rec),
    el("h3", {}, "Output files"), outputs(id, outs),
    el("h3", {}, "Output"), out);
  source = new EventSource("/api/jobs/" + encodeURIComponent(id) + "/events");
  source.onmessage = (ev) => {
    const u = JSON.parse(ev.data);
    if (u.kind === "output") {
      const tag = u.rank < 0 ? "zorilla" : u.replica > 0 ? `${u.rank}.${u.replica}` : String(u.rank);
      out.append(el("span", { class: "line " + u.stream, "data-rank": u.rank }, `[${tag}] ${u.line}${u.note ? " (" + u.note + ")" : ""}\n`));
      out.scrollTop = out.scrollHeight;
    } else if (u.kind === "progress" && u.flood) {
      samples.push(u.flood);
      chart.replaceChildren(floodChart(samples));
    } else if (u.kind === "state") {
      head.querySelector("#state").textContent = u.state;
    } else if (u.kind === "end" && u.record && !final(rec.state)) {
      source.close();
      setTimeout(route, 500); // draw the finished job
    }
  };
  source.addEventListener("close", () => source && source.close());
}

function placement(rec, group) {
  const plan = rec.plan;
  if (!plan || !plan.hosts) return el("p", { class: "muted" }, "Not placed yet.");
  const hosts = plan.hosts.map((h) => ({ h, g: group[h.offer.peer] || "unknown group" }));
  hosts.sort((a, b) => a.g.localeCompare(b.g) || a.h.offer.rtt - b.h.offer.rtt);
  const rows = hosts.map(({ h, g }) => el("tr", { class: "host", "data-host": h.offer.peer },
    el("td", {}, g), el("td", { class: "mono", title: h.offer.peer }, h.offer.peer),
    el("td", {}, ms(h.offer.rtt)),
    el("td", {}, h.procs.map((p) => el("span", { class: "rank" + (p.replica > 0 ? " backup" : ""), "data-rank": p.rank, "data-replica": p.replica, "data-host": h.offer.peer },
      p.replica > 0 ? `${p.rank}.${p.replica}` : String(p.rank))))));
  return el("table", { id: "placement" },
    el("tr", {}, ["group", "host", "RTT from submitter", "ranks (rank.copy)"].map((h) => el("th", {}, h))), rows);
}

function timeline(rec) {
  const t0 = new Date(rec.created);
  return el("table", { id: "timeline" }, el("tr", {}, el("th", {}, "state"), el("th", {}, "at"), el("th", {}, "+"), el("th", {}, "why")),
    (rec.history || []).map((e) => el("tr", {}, el("td", { class: "state-" + e.state }, e.state), el("td", {}, when(e.at)),
      el("td", {}, ((new Date(e.at) - t0) / 1000).toFixed(2) + " s"), el("td", {}, e.reason || ""))));
}

function failures(rec) {
  const kids = [];
  if (rec.runs && rec.runs.length) {
    kids.push(el("table", { id: "runs" }, el("tr", {}, ["attempt", "started", "hosts", "end"].map((h) => el("th", {}, h))),
      rec.runs.map((r) => el("tr", {}, el("td", {}, r.attempt), el("td", {}, when(r.started)), el("td", {}, r.hosts.length), el("td", {}, r.end || "")))));
  }
  for (const l of rec.lost || []) kids.push(el("p", {}, `copy ${l.rank}.${l.replica} lost on ${short(l.host)} at ${when(l.at)}: ${l.why}`));
  for (const h of rec.unavailable || []) kids.push(el("p", {}, `host ${short(h)} left out after a failure`));
  if (rec.restarts) kids.push(el("p", {}, `started again ${rec.restarts} time(s) after losing a host`));
  if (rec.switches && rec.switches.length) kids.push(sharing(rec));
  return kids.length ? el("div", {}, kids) : el("p", { class: "muted" }, "None.");
}

// sharing is the job's time running, frozen and swapped out (the current
// phase counted until now) and its switches between them. Time frozen by
// gang time slices (time.sliced) counts as frozen, not running, as in
// job.Record.TimeAt.
function sharing(rec) {
  const t = Object.assign({ running: 0, frozen: 0, swapped: 0, sliced: 0 }, rec.time || {});
  const last = rec.switches[rec.switches.length - 1];
  if (last.to in t && last.to !== "sliced") t[last.to] += (Date.now() - new Date(last.at)) * 1e6;
  const sliced = Math.min(t.sliced, t.running);
  t.running -= sliced;
  t.frozen += sliced;
  const s = (ns) => (ns / 1e9).toFixed(1) + " s";
  const bySlices = sliced > 0 ? ` (${s(sliced)} of it by time slices)` : "";
  return el("div", { id: "sharing" },
    el("p", {}, `time running ${s(t.running)}, frozen ${s(t.frozen)}${bySlices}, swapped out ${s(t.swapped)}`),
    el("p", { class: "muted" }, "switches: " + rec.switches.map((w) => `${w.to} at ${when(w.at)}${w.why ? " (" + w.why + ")" : ""}`).join("; ")));
}

function outputs(id, outs) {
  if (!outs.length) return el("p", { class: "muted" }, "None.");
  return el("ul", {}, outs.map((o) => el("li", {},
    el("a", { href: "/api/jobs/" + encodeURIComponent(id) + "/outputs/" + encodeURIComponent(o.name), download: o.name }, o.name), ` (${o.size} bytes)`)));
}

// floodChart draws the reservation: slots and offers as they arrived and
// the flood's radius, against the n x r processes needed.
function floodChart(samples) {
  if (!samples.length) return el("p", { class: "muted" }, "No flood sampled.");
  const W = 620, H = 220, L = 40, B = 30, T = 10, Rm = 40;
  const t0 = new Date(samples[0].at);
  const xs = samples.map((s) => (new Date(s.at) - t0) / 1000);
  const tmax = Math.max(1, ...xs);
  const ymax = Math.max(1, ...samples.map((s) => Math.max(s.slots, s.need, s.offers))) * 1.15;
  const rmax = Math.max(1, ...samples.map((s) => s.radius));
  const X = (t) => L + ((W - L - Rm) * t) / tmax, Y = (v) => H - B - ((H - B - T) * v) / ymax, YR = (r) => H - B - ((H - B - T) * r) / (rmax * 1.15);
  const step = (key, yf) => samples.map((s, i) => `${i ? "L" : "M"}${X(xs[i])},${yf(s[key])}` + (i + 1 < samples.length ? ` L${X(xs[i + 1])},${yf(s[key])}` : "")).join(" ");
  const need = samples[samples.length - 1].need;
  return el("div", {},
    el("svg:svg", { width: W, height: H, id: "flood-chart" },
      el("svg:line", { class: "grid", x1: L, y1: H - B, x2: W - Rm, y2: H - B }),
      el("svg:line", { class: "need", x1: L, y1: Y(need), x2: W - Rm, y2: Y(need) }),
      el("svg:text", { x: W - Rm + 2, y: Y(need) + 4 }, "n x r " + need),
      [...Array(rmax).keys()].map((r) => el("svg:text", { class: "c-radius", x: W - 12, y: YR(r + 1) + 4 }, "r" + (r + 1))),
      el("svg:path", { class: "radius", d: step("radius", YR) }),
      el("svg:path", { class: "offers", d: step("offers", Y) }),
      el("svg:path", { class: "slots", d: step("slots", Y) }),
      el("svg:text", { x: L, y: H - 8 }, "0 s"), el("svg:text", { x: W - Rm, y: H - 8, "text-anchor": "end" }, tmax.toFixed(1) + " s"),
      el("svg:text", { x: 4, y: Y(ymax / 1.15) + 4 }, String(Math.round(ymax / 1.15)))),
    el("p", { class: "legend" }, el("span", { class: "c-slots" }, "— slots"), el("span", { class: "c-offers" }, "— offers"),
      el("span", { class: "c-radius" }, `— radius (max ${rmax})`), el("span", { class: "c-need" }, "- - n x r")));
}

// ---- This agent ----------------------------------------------------------

async function agentPage() {
  const [a, id] = await Promise.all([get("/api/agent"), get("/api/id")]);
  const p = a.policy;
  const kv = (rows) => el("table", {}, rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))));
  const gib = (b) => (b / (1 << 30)).toFixed(1) + " GiB";
  const ad = a.stats.adverts || {};
  show(el("h2", {}, "This agent"),
    kv([["peer ID", el("span", { class: "mono" }, id.id)], ["network", id.network || ""], ["addresses", (id.addrs || []).join("\n")],
      ["reachability", id.reachability || ""]]),
    el("h3", {}, "Policy"),
    kv([["J (jobs at once)", p.max_jobs], ["P (processes of a job)", p.max_procs], ["cores", p.cores], ["memory", gib(p.memory)],
      ["os/arch", p.os + "/" + p.arch], ["labels", p.labels.join(", ")], ["accepts", p.accepts], ["denied", p.denied]]),
    el("h3", {}, "Leases and processes"),
    el("p", { id: "procs" }, `${a.procs} process(es) of jobs running here, ${a.leases.length} lease(s)`),
    a.leases.length ? el("table", { id: "leases" }, el("tr", {}, ["job", "submitter", "slots", "cores", "state"].map((h) => el("th", {}, h))),
      a.leases.map((l) => el("tr", {}, el("td", { class: "mono" }, l.job), el("td", { class: "mono" }, short(l.submitter)), el("td", {}, l.slots), el("td", {}, l.cores),
        el("td", {}, l.committed ? "running" : "reserved until " + when(l.expires))))) : "",
    el("h3", {}, "Flood counters"),
    kv(Object.entries(ad).filter(([k]) => k !== "Dropped").map(([k, v]) => [k, v])),
    el("h3", {}, "Refused, by reason (adverts dropped among them)"),
    Object.keys(a.stats.refused || {}).length ? kv(Object.entries(a.stats.refused).sort().map(([k, v]) => [k, v]))
      : el("p", { class: "muted", id: "refused" }, "Nothing refused."));
  timer = setTimeout(route, 5000);
}

// ---- Routing -------------------------------------------------------------

async function route() {
  clearTimeout(timer);
  if (source) { source.close(); source = null; }
  const h = location.hash || "#/network";
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", h.startsWith(a.getAttribute("href")));
  try {
    if (h.startsWith("#/jobs/")) await jobPage(decodeURIComponent(h.slice(7)));
    else if (h === "#/jobs") await jobsPage();
    else if (h === "#/agent") await agentPage();
    else await networkPage();
  } catch (err) {
    fail(err);
  }
}

window.addEventListener("hashchange", route);
get("/api/id").then((id) => { document.getElementById("self").textContent = "agent " + short(id.id); }).catch(() => {});
route();
