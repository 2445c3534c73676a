// kvrace viewer: steps through a run (a counterexample) and, when served by
// `kvrace view SPEC`, simulates: the server computes the enabled events.
// The page's data is the JSON in #kvrace-data: {view, check, live}; a view is
// what checker/view/steps.py:view_json returns.
"use strict";

const DATA = JSON.parse(document.getElementById("kvrace-data").textContent);
const ORIGINAL = DATA.view;        // the counterexample (or the trace given)
let view = DATA.view;              // the run shown now
let cur = 0;                       // the step shown
let seed = 1;                      // random steps: a new seed for each one
let turn = 1;                      // in a lasso's cycle: which turn of it is shown

const RED = "#c62828", OWNER = "#1a4f9c", GREY = "#757575", LANE = "#9e9e9e";
const LANE_GAP = 230, ROW = 46, LINE = 14, TOP = 60, LEFT = 90;
const MAX_OTHER_CHANGES = 3;       // changes besides owner[...] written in the diagram
const LASSO = "#e65100", BAND = "#fff3e0", LABEL_GAP = 28;
const WRAP = 64;                   // characters of a note's line before it wraps
const CHAR = 7;                    // about the width of a character of a note, in px

function $(id) { return document.getElementById(id); }

function el(tag, attrs, text) {
  const ns = ["svg", "line", "text", "rect", "circle", "path", "marker", "defs", "tspan", "g"];
  const e = ns.includes(tag)
    ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// How the counterexample goes on for ever (a liveness lasso), or null: only for the
// run the check found, not for a simulated one.
function lasso() {
  return view === ORIGINAL && DATA.check && DATA.check.lasso ? DATA.check.lasso : null;
}

// The cycle's [first, last] step, or null.
function cycle() {
  const L = lasso();
  return L && L.loop !== null ? [L.loop, L.last] : null;
}

function raceStep() {
  if (view === ORIGINAL && DATA.check && DATA.check.violating !== null) return DATA.check.violating;
  return view.violating;
}

// ---- the sequence diagram ------------------------------------------------------

function eventText(s) {
  return s.event + "(" + s.args.join(", ") + ")";
}

// The lines of a step's note: the event, its owner[...] changes (who holds which
// slot; "none" reads "free"), a few other changes, and the violation.
function noteLines(s, isBad) {
  const lines = [{text: eventText(s), bold: true}];
  const changes = Object.entries(s.changes);
  for (const [c, [a, b]] of changes.filter(([c]) => c.startsWith("owner["))) {
    lines.push({text: c.slice(6, -1) + ": " + free(a) + " \u2192 " + free(b), fill: OWNER});
  }
  const others = changes.filter(([c]) => !c.startsWith("owner["));
  for (const [c, [a, b]] of others.slice(0, MAX_OTHER_CHANGES)) {
    lines.push({text: c + ": " + a + " \u2192 " + b, fill: GREY});
  }
  if (others.length > MAX_OTHER_CHANGES) lines.push({text: "\u2026", fill: GREY});
  if (isBad && s.failure) {
    for (const part of wrap(s.failure, WRAP)) lines.push({text: part, fill: RED});
  }
  return lines;
}

// ``text`` in lines of at most ``n`` characters, broken at spaces where there are any.
function wrap(text, n) {
  const out = [];
  let line = "";
  for (const word of text.split(" ")) {
    let w = word;
    while (w.length > n) {  // a word longer than a line is cut
      if (line) { out.push(line); line = ""; }
      out.push(w.slice(0, n));
      w = w.slice(n);
    }
    if (!line) line = w;
    else if (line.length + 1 + w.length <= n) line += " " + w;
    else { out.push(line); line = w; }
  }
  if (line || !out.length) out.push(line);
  return out;
}

function drawDiagram() {
  const actors = view.actors.slice();
  for (const s of view.steps) if (s.actor && !actors.includes(s.actor)) actors.push(s.actor);
  const steps = view.steps.slice(1, cur + 1);
  const bad = raceStep();
  const notes = steps.map((s) => noteLines(s, s.index === bad));
  const ys = [TOP];  // the y of each row: a row is as tall as its note
  const L = lasso(), cyc = cycle();
  // Room for the cycle's label above its first step.
  notes.forEach((n, k) => ys.push(ys[k] + (k === 0 ? ROW : Math.max(ROW, LINE * notes[k - 1].length + 18))
    + (cyc && steps[k].index === cyc[0] ? LABEL_GAP : 0)));
  const last = notes.length ? LINE * notes[notes.length - 1].length : 0;
  const atEnd = L !== null && cur === view.steps.length - 1;
  // Wide enough for the lanes and for the longest line of every note.
  let width = LEFT + LANE_GAP * actors.length + 200;
  steps.forEach((s, k) => {
    const cx = s.actor ? LEFT + LANE_GAP * actors.indexOf(s.actor) + 40 : LEFT;
    for (const line of notes[k]) width = Math.max(width, cx + 20 + CHAR * line.text.length);
  });
  const height = ys[ys.length - 1] + Math.max(ROW, last + 18) + 20 + (atEnd ? 24 : 0);
  const svg = el("svg", {width, height, viewBox: `0 0 ${width} ${height}`, id: "diagram-svg"});
  const defs = el("defs");
  for (const [id, color] of [["arrow", "black"], ["arrow-red", RED]]) {
    const m = el("marker", {id, viewBox: "0 0 10 10", refX: 10, refY: 5,
      markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse"});
    m.appendChild(el("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: color}));
    defs.appendChild(m);
  }
  for (const [id, color] of [["arrow-lasso", LASSO]]) {
    const m = el("marker", {id, viewBox: "0 0 10 10", refX: 10, refY: 5,
      markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse"});
    m.appendChild(el("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: color}));
    defs.appendChild(m);
  }
  svg.appendChild(defs);
  const x = (a) => LEFT + LANE_GAP * actors.indexOf(a) + 40;
  const y = (r) => ys[r];
  svg.appendChild(el("text", {x: 10, y: 34, fill: GREY}, "time"));
  for (const a of actors) {
    svg.appendChild(el("line", {x1: x(a), y1: 40, x2: x(a), y2: height - 10,
      stroke: LANE, "stroke-width": 1.2}));
    svg.appendChild(el("rect", {x: x(a) - 45, y: 14, width: 90, height: 28, rx: 6,
      fill: "#eceff1", stroke: "#607d8b"}));
    svg.appendChild(el("text", {x: x(a), y: 33, "text-anchor": "middle",
      "font-weight": "bold"}, a));
  }
  const rowOf = {};
  steps.forEach((s, k) => { rowOf[s.index] = k + 1; });
  const bottom = (r) => ys[r] + LINE * notes[r - 1].length + 6;  // under a row's note
  if (cyc && cur >= cyc[0]) drawCycle(svg, cyc, rowOf, bottom, width, y);
  if (atEnd) {
    const r = steps.length;
    const yEnd = (r ? bottom(r) : TOP) + 18;
    const text = cyc ? "\u21ba back to step " + cyc[0] + ": the cycle repeats for ever" : L.text;
    svg.appendChild(el("text", {x: 10, y: yEnd, fill: LASSO, "font-weight": "bold",
      class: "lasso-end"}, text));
  }
  for (const s of steps) {  // messages first, under the points
    if (s.receives === null || !(s.receives in rowOf) || !s.actor) continue;
    const from = view.steps[s.receives];
    const isBad = s.index === bad;
    const x1 = x(from.actor), y1 = y(rowOf[from.index]), x2 = x(s.actor), y2 = y(rowOf[s.index]);
    svg.appendChild(el("line", {x1, y1, x2, y2, stroke: isBad ? RED : "black",
      "stroke-width": isBad ? 2.4 : 1.2, "marker-end": `url(#${isBad ? "arrow-red" : "arrow"})`,
      class: "message"}));
    if (from.time !== null && s.time !== null) {
      const dt = timeValue(s.time) - timeValue(from.time);
      svg.appendChild(el("text", {x: (x1 + x2) / 2 + 4, y: (y1 + y2) / 2 - 4, "font-size": 11,
        fill: isBad ? RED : GREY}, "\u0394t=" + fmt(dt)));
    }
  }
  steps.forEach((s, k) => {
    const r = k + 1, isBad = s.index === bad;
    const g = el("g", {class: "step", "data-index": s.index});
    g.appendChild(el("text", {x: 10, y: y(r) + 4, fill: isBad ? RED : "black"},
      (s.time !== null ? "t=" + s.time + "  " : s.window ? s.window + "  " : "") + "#" + s.index));
    const cx = s.actor ? x(s.actor) : LEFT;
    if (s.actor) g.appendChild(el("circle", {cx, cy: y(r), r: 5, fill: isBad ? RED : "black"}));
    const t = el("text", {x: cx + 10, y: y(r) + 4, fill: isBad ? RED : "black"});
    notes[k].forEach((line, j) => {
      const attrs = j === 0 ? {"font-weight": "bold"} : {x: cx + 10, dy: LINE, "font-size": 12};
      if (line.fill && j > 0) attrs.fill = line.fill;
      t.appendChild(el("tspan", attrs, line.text));
    });
    g.appendChild(t);
    svg.appendChild(g);
  });
  $("diagram").replaceChildren(svg);
}

// The band behind the cycle's steps, its label and, once its last step is shown, the
// arrow back to its first.
function drawCycle(svg, cyc, rowOf, bottom, width, y) {
  const [first, lastStep] = cyc;
  const shownLast = Math.min(cur, lastStep);
  const top = y(rowOf[first]) - LABEL_GAP - 4;
  const g = el("g", {class: "cycle", "data-loop": first, "data-last": lastStep});
  g.appendChild(el("rect", {x: 2, y: top, width: width - 4,
    height: bottom(rowOf[shownLast]) - top + 4, rx: 6, fill: BAND, stroke: LASSO,
    "stroke-dasharray": cur >= lastStep ? "" : "4 3"}));
  // The label goes over the lanes, with a halo of the band's colour.
  const label = el("text", {x: 10, y: top + 17, fill: LASSO, "font-weight": "bold",
    class: "cycle-label", stroke: BAND, "stroke-width": 4, "paint-order": "stroke"},
    lasso().text + (turn > 1 ? "  \u2014 turn " + turn : ""));
  if (cur >= lastStep) {
    const xr = width - 14, y1 = y(rowOf[lastStep]), y0 = y(rowOf[first]);
    g.appendChild(el("path", {d: `M ${xr - 16} ${y1} H ${xr} V ${y0} H ${xr - 16}`,
      fill: "none", stroke: LASSO, "stroke-width": 2, "marker-end": "url(#arrow-lasso)"}));
  }
  svg.insertBefore(g, svg.querySelector("line"));  // under the lanes and the steps
  svg.appendChild(label);
}

function free(v) { return v === "none" ? "free" : v; }

// Times are exact decimals or fractions (1/3): enough for a label.
function timeValue(t) {
  const [n, d] = t.split("/");
  return d === undefined ? Number(n) : Number(n) / Number(d);
}
function fmt(x) { return Number.isInteger(x) ? String(x) : x.toFixed(3).replace(/0+$/, ""); }

// ---- the side panel ------------------------------------------------------------

function drawSide() {
  const s = view.steps[cur];
  const bad = raceStep();
  const cyc = cycle();
  const inCycle = cyc !== null && cur >= cyc[0];
  $("step-counter").textContent = `step ${cur} / ${view.steps.length - 1}` +
    (inCycle && turn > 1 ? ` (turn ${turn})` : "");
  const L = lasso();
  $("lasso").textContent = L ? (L.kind === "cycle" ? "\u21ba " : "") + L.text : "";
  $("run-kind").textContent = view === ORIGINAL
    ? (DATA.check && DATA.check.violating !== null ? "the counterexample" : "")
    : (view.symbolic ? "your symbolic run" : "your run") +
      (view.violating !== null ? ": it violates a property at step " + view.violating : "");
  const head = $("step-head");
  head.replaceChildren();
  if (s.time !== null) head.appendChild(el("span", {class: "time"}, "t=" + s.time));
  else if (s.window) head.appendChild(el("span", {class: "time"}, s.window));
  head.appendChild(el("b", {}, s.index === 0 ? "initial state" : s.label));
  if (s.receives !== null) head.appendChild(el("span", {class: "hint"}, "  \u2190 step " + s.receives));
  const notes = $("notes");
  notes.replaceChildren(...s.notes.map((n) => el("div", {}, n)));
  if (cur === bad && s.notes.length === 0 && DATA.check && DATA.check.message) {
    notes.appendChild(el("div", {}, DATA.check.property + ": " + DATA.check.message));
  }
  const body = $("state-table").tBodies[0];
  body.replaceChildren();
  for (const [cell, value] of Object.entries(s.state)) {
    const tr = el("tr", {"data-cell": cell});
    const changed = cell in s.changes;
    if (changed) tr.classList.add("changed");
    if (cell.startsWith("owner[")) tr.classList.add("owner");
    tr.appendChild(el("td", {}, cell));
    const td = el("td", {class: "value"}, value);
    if (changed) td.setAttribute("data-old", s.changes[cell][0]);
    tr.appendChild(td);
    body.appendChild(tr);
  }
  const clocks = $("clock-table").tBodies[0];
  const none = view.symbolic ? "(symbolic run: the zone below says what they can be)"
    : "(no clock reset yet)";
  clocks.replaceChildren(...(s.clocks.length ? s.clocks : [[none, ""]])
    .map(([c, v]) => { const tr = el("tr"); tr.append(el("td", {}, c), el("td", {}, v)); return tr; }));
  $("zone").replaceChildren(...s.zone.map((z) => el("li", {}, z)));
  drawEnabled(s);
  $("btn-prev").disabled = $("btn-first").disabled = cur === 0;
  $("btn-last").disabled = cur === view.steps.length - 1 && turn === 1;
  $("btn-next").disabled = cur === view.steps.length - 1 && cyc === null;
  $("btn-race").disabled = raceStep() === null && !(DATA.check && DATA.check.violating !== null);
}

function drawEnabled(s) {
  const body = $("enabled").tBodies[0];
  body.replaceChildren();
  for (const e of s.enabled) {
    const tr = el("tr", {"data-label": e.label});
    if (e.fails) tr.classList.add("fails");
    tr.appendChild(el("td", {class: "label"}, e.label + (e.fails ? "  \u26a0" : "")));
    tr.appendChild(el("td", {class: "window"}, e.window));
    tr.appendChild(el("td", {class: "delay"}, e.delay));
    if (DATA.live && view.symbolic) {
      const go = el("button", {class: "fire"}, "fire");
      go.addEventListener("click", () => fireSymbolic(e.move));
      tr.appendChild(el("td")).appendChild(go);
    } else if (DATA.live) {
      const input = el("input", {value: e.pick, title: "the time at which it fires"});
      const go = el("button", {class: "fire"}, "fire");
      go.addEventListener("click", () => fire(e.move, input.value.trim()));
      const td = el("td");
      td.append("t=", input, " ", go);
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  if (s.enabled.length === 0) body.appendChild(el("tr", {}, "")).appendChild(
    el("td", {class: "hint"}, "nothing can fire here"));
  $("sim-tools").style.display = DATA.live ? "" : "none";
  $("btn-symbolic").disabled = Boolean(view.symbolic);
  $("btn-concretise").disabled = !view.symbolic;
  $("btn-save").disabled = Boolean(view.symbolic);
  $("static-note").textContent = DATA.live ? "" :
    "To pick one of these events and simulate from here, run `kvrace view SPEC`.";
}

function show(i) {
  cur = Math.max(0, Math.min(i, view.steps.length - 1));
  const cyc = cycle();
  if (cyc === null || cur < cyc[0]) turn = 1;
  drawDiagram();
  drawSide();
  if (view === ORIGINAL) {
    // The address names the step shown (#step=N), so it can be shared or reloaded.
    try { history.replaceState(null, "", "#step=" + cur); } catch (err) { /* sandboxed */ }
  }
}

// The step an address asks for: #race (or #lasso), #step=N; else the page's own start.
function startStep() {
  const h = decodeURIComponent(location.hash.slice(1));
  const m = /^step=(\d{1,9})$/.exec(h);
  if (m) return Number(m[1]);
  if (h === "race" || h === "lasso") return raceStep() ?? 0;
  if (DATA.start === "race") return raceStep() ?? 0;
  return typeof DATA.start === "number" ? DATA.start : 0;
}

// A step on: past the last step of a lasso's cycle, back to its first (the next turn).
function next() {
  const cyc = cycle();
  if (cyc !== null && cur === cyc[1]) {
    turn++;
    show(cyc[0]);
  } else show(cur + 1);
}

// A step back: before the first step of a later turn of the cycle, the previous turn's last.
function prev() {
  const cyc = cycle();
  if (cyc !== null && cur === cyc[0] && turn > 1) {
    turn--;
    show(cyc[1]);
  } else show(cur - 1);
}

function jump(i) {
  turn = 1;
  show(i);
}

// ---- simulation (served pages only) --------------------------------------------

function moves(upto) {
  return view.steps.slice(1, upto + 1).map((s) => [s.move, s.time]);
}

// The server answers only requests that carry the token of the address it printed.
const TOKEN = new URLSearchParams(location.search).get("token") || "";

async function call(path, body) {
  const resp = await fetch(path, {method: "POST", body: JSON.stringify(body),
    headers: {"Content-Type": "application/json", "X-Kvrace-Token": TOKEN}});
  const got = await resp.json();
  if (!resp.ok) throw new Error(got.error || resp.statusText);
  return got;
}

async function update(path, body) {
  $("sim-status").textContent = "";
  try {
    view = await call(path, body);
    show(view.steps.length - 1);
  } catch (err) {
    $("sim-status").textContent = err.message;
  }
}

function fire(move, time) {
  return update("/api/run", {moves: [...moves(cur), [move, time]]});
}

function randomStep() {
  if (view.symbolic) {
    const options = view.steps[cur].enabled;
    if (!options.length) return Promise.resolve();
    return fireSymbolic(options[(seed++ * 7919) % options.length].move);
  }
  return update("/api/random", {moves: moves(cur), seed: seed++});
}

// ---- the symbolic simulator: events without times, a zone per step ------------

function events(upto) {
  return view.steps.slice(1, upto + 1).map((s) => s.move);
}

function symbolic() {
  return update("/api/symbolic", {moves: events(cur)});
}

function fireSymbolic(move) {
  return update("/api/symbolic", {moves: [...events(cur), move]});
}

function concretise() {
  return update("/api/concretise", {moves: events(cur)});
}

async function save() {
  try {
    const itf = await call("/api/trace", {moves: moves(cur)});
    const blob = new Blob([JSON.stringify(itf, null, 2) + "\n"], {type: "application/json"});
    const a = el("a", {href: URL.createObjectURL(blob), download: view.model + ".trace.json"});
    document.body.appendChild(a);
    a.click();
    a.remove();
  } catch (err) {
    $("sim-status").textContent = err.message;
  }
}

// ---- wiring --------------------------------------------------------------------

function race() {
  if (raceStep() === null && DATA.check && DATA.check.violating !== null) view = ORIGINAL;
  const r = raceStep();
  if (r !== null) jump(r);
}

function explain(ex) {
  // The parameter region in which this run's sequence of events is possible, and
  // where each of its constraints' parameters come from in the spec.
  $("explain").hidden = false;
  $("explain").querySelector("summary").textContent =
    "this sequence of events is possible exactly when: " + ex.region;
  const list = $("explain-sources");
  for (const p of ex.provenance) {
    const item = el("li", {}, p.constraint);
    const sub = el("ul");
    for (const s of p.sources) sub.appendChild(el("li", {}, s));
    if (p.sources.length === 0) sub.appendChild(el("li", {}, "(no element bounds these parameters)"));
    item.appendChild(sub);
    list.appendChild(item);
  }
}

function init() {
  const params = Object.entries(view.params).map(([k, v]) => `${k}=${v}`).join(", ");
  $("title").replaceChildren(view.model, el("span", {class: "params"}, params));
  const c = DATA.check;
  const v = $("verdict");
  if (c) {
    v.textContent = c.verdict.toUpperCase() + (c.property ? ": " + c.property : "") +
      (c.message ? ": " + c.message : "");
    v.className = c.verdict;
  }
  if (c && c.lasso) $("btn-race").textContent = "show me the lasso";
  if (c && c.explain) explain(c.explain);
  $("btn-first").addEventListener("click", () => jump(0));
  $("btn-prev").addEventListener("click", prev);
  $("btn-next").addEventListener("click", next);
  $("btn-last").addEventListener("click", () => jump(view.steps.length - 1));
  $("btn-race").addEventListener("click", race);
  $("btn-random").addEventListener("click", randomStep);
  $("btn-save").addEventListener("click", save);
  $("btn-symbolic").addEventListener("click", symbolic);
  $("btn-concretise").addEventListener("click", concretise);
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT") return;
    const go = {ArrowLeft: prev, ArrowRight: next, Home: () => jump(0),
      End: () => jump(view.steps.length - 1)};
    if (ev.key in go) { go[ev.key](); ev.preventDefault(); }
  });
  window.addEventListener("hashchange", () => {
    view = ORIGINAL;
    jump(startStep());
  });
  jump(startStep());
}

init();
