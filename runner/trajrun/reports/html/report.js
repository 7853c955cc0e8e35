// trajrun HTML report: builds the page from the JSON report embedded in #trajrun-data.
// Rows are added in chunks as the list scrolls, and a case's body is built only when it is opened,
// so a run of 10,000 cases opens as fast as one of ten. Data goes into the DOM as text, never as HTML.
"use strict";
(() => {
  const OUTCOMES = ["passed", "failed", "error", "skipped", "xfailed", "xpassed"];
  const WORDS = {passed: "PASSED", failed: "FAILED", error: "ERROR", skipped: "SKIPPED", xfailed: "XFAIL", xpassed: "XPASS"};
  const PROBLEMS = new Set(["failed", "error", "xpassed"]);
  const VERDICT_CLASS = {
    "ok": "r-ok", "MISSING": "r-missing", "UNEXPECTED": "r-unexpected", "extra": "r-extra", "not called": "r-extra",
    "args differ": "r-differ", "result differs": "r-differ", "error differs": "r-differ", "out of order": "r-differ",
    "other turn": "r-differ", "forbidden": "r-forbidden", "": "r-plain",
  };
  const FORBIDDEN_OVER = new Set(["ok", "extra", "UNEXPECTED", ""]);  // verdicts a `never` hit replaces
  const CHUNK = 50;         // case rows added at a time
  const ROWS = 300;         // timeline rows shown before "show more"
  const SUITES_SHOWN = 12;  // suite bars shown before "show all"
  const BIG = 4000;         // a one-line value longer than this is shown as plain text
  const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
  const BASELINE = {new: "new failure: it did not fail in the baseline (--baseline)",
    known: "known failure: it failed in the baseline too (--baseline)"};
  const FLAKY = "flaky: some of its runs (repeat) passed and some did not";
  const baselineText = (mark) => (Object.hasOwn(BASELINE, mark) ? BASELINE[mark] : String(mark));
  const QUOTED = String.raw`'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"`;  // a Python repr of a string
  const PARTED = new RegExp(  // the rest of a diff line on two long texts (see `parted`)
    String.raw`^: expected (…?)(${QUOTED})(…?), got (…?)(${QUOTED})(…?) \((differs [^)]*)\)$`);

  const $ = (id) => document.getElementById(id);
  const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : String(n ?? "—"));

  /** An element with attributes, listeners (on...) and children (strings become text). */
  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v == null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : v);
    }
    add(el, kids);
    return el;
  }

  /** Append children: nodes as they are, arrays flattened, other values as text. */
  function add(el, kid) {
    if (kid == null || kid === false) return;
    if (Array.isArray(kid)) kid.forEach((k) => add(el, k));
    else el.append(kid instanceof Node ? kid : String(kid));
  }

  const DATA = JSON.parse($("trajrun-data").textContent);
  const SUITES = Array.isArray(DATA.suites) ? DATA.suites : [];
  const CASES = [];
  SUITES.forEach((s, si) => (s.cases || []).forEach((c) => CASES.push({c, si})));
  const RANK = {failed: 0, error: 1, xpassed: 2};  // problems first, open; mismatches before errors
  const rank = (i) => RANK[CASES[i].c.outcome] ?? 3;
  const ORDER = CASES.map((_, i) => i).sort((a, b) => rank(a) - rank(b) || a - b);
  const PER_SUITE = SUITES.map(() => []);
  CASES.forEach((x) => PER_SUITE[x.si].push(x));
  const state = {
    outcomes: new Set(), suite: null, terms: [], list: [], shown: 0, hay: null, allSuites: false,
    open: new Set(ORDER.filter((i) => PROBLEMS.has(CASES[i].c.outcome))),
  };

  // ---- totals, suites, load errors --------------------------------------------------------

  function countOutcomes(items) {
    const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0]));
    for (const item of items) counts[item.c.outcome] = (counts[item.c.outcome] || 0) + 1;
    return counts;
  }

  function bar(counts, total) {
    const el = h("div", {class: "bar", title: OUTCOMES.filter((o) => counts[o]).map((o) => `${counts[o]} ${o}`).join(", ")});
    for (const o of OUTCOMES) {
      if (!counts[o]) continue;
      const seg = h("span", {class: `b-${o}`});
      seg.style.width = `${(100 * counts[o]) / total}%`;
      el.append(seg);
    }
    return el;
  }

  function renderTotals() {
    const counts = countOutcomes(CASES);
    const tiles = [h("button", {type: "button", class: "tile all", "data-outcome": "all", "aria-pressed": String(!state.outcomes.size),
      onclick: () => { state.outcomes.clear(); refresh(); }}, h("span", {class: "n"}, fmt(CASES.length)), h("span", {class: "w"}, "cases"))];
    for (const o of OUTCOMES) {
      tiles.push(h("button", {type: "button", class: `tile o-${o}${counts[o] ? "" : " zero"}`, "data-outcome": o,
        "aria-pressed": String(state.outcomes.has(o)), title: `show only ${o} cases (click again to drop)`,
        onclick: () => { state.outcomes.has(o) ? state.outcomes.delete(o) : state.outcomes.add(o); refresh(); }},
        h("span", {class: "n"}, fmt(counts[o])), h("span", {class: "w"}, o)));
    }
    $("totals").replaceChildren(...tiles, CASES.length ? bar(counts, CASES.length) : "");
  }

  function renderSuites() {
    const rows = [];
    const shown = state.allSuites ? SUITES : SUITES.slice(0, SUITES_SHOWN);
    shown.forEach((s, si) => {
      const items = PER_SUITE[si];
      const counts = countOutcomes(items);
      const loadFailed = (s.load_errors || []).length > 0;
      const text = loadFailed ? "could not be loaded" : `${fmt(counts.passed)} of ${fmt(items.length)} passed`;
      rows.push(h("div", {class: `suite${state.suite === si ? " active" : ""}`, "data-suite": si, title: "show only this suite",
        onclick: () => { state.suite = state.suite === si ? null : si; refresh(); }},
        h("span", {class: "sname"}, h("span", {class: "name"}, s.name), h("span", {class: "file"}, s.file)),
        bar(loadFailed ? {error: 1} : counts, items.length || 1),
        h("span", {class: `scount${loadFailed ? " o-error" : ""}`}, text)));
    });
    if (shown.length < SUITES.length) {
      rows.push(h("button", {type: "button", class: "suite-more", onclick: () => { state.allSuites = true; renderSuites(); }},
        `Show all ${fmt(SUITES.length)} suites`));
    }
    $("suites").replaceChildren(...rows);
  }

  function renderLoadErrors() {
    const broken = SUITES.filter((s) => (s.load_errors || []).length);
    if (!broken.length) return;
    $("load-errors").replaceChildren(h("div", {class: "load-errors"},
      h("h2", null, `${broken.length} suite file${broken.length > 1 ? "s" : ""} could not be loaded`),
      broken.map((s) => [h("div", {class: "mono"}, s.file), h("pre", null, s.load_errors.join("\n"))])));
  }

  // ---- filtering and the chunked case list -------------------------------------------------

  function haystack(i) {
    state.hay ??= new Array(CASES.length);
    if (state.hay[i] !== undefined) return state.hay[i];
    const {c, si} = CASES[i];
    const parts = [c.name, c.id, SUITES[si].name, c.message];
    for (const call of c.trajectory?.tool_calls || []) parts.push(call.name, text(call.args));
    for (const step of c.steps?.expected || []) parts.push(step.name, step.args == null ? "" : text(step.args));
    for (const r of c.bulk?.worst || []) parts.push(r.record, r.message);
    if (c.repeats?.flaky) parts.push("flaky");
    return (state.hay[i] = parts.join("\n").toLowerCase());
  }

  const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));

  function matches(i) {
    const {c, si} = CASES[i];
    if (state.outcomes.size && !state.outcomes.has(c.outcome)) return false;
    if (state.suite !== null && si !== state.suite) return false;
    return !state.terms.length || state.terms.every((t) => haystack(i).includes(t));
  }

  function refresh() {
    state.list = ORDER.filter(matches);
    state.shown = 0;
    $("cases").replaceChildren();
    appendChunk();
    renderTotals();
    renderSuites();
    renderStatus();
  }

  function appendChunk() {
    const end = Math.min(state.shown + CHUNK, state.list.length);
    const frag = document.createDocumentFragment();
    for (let k = state.shown; k < end; k++) frag.append(caseEl(state.list[k]));
    $("cases").append(frag);
    state.shown = end;
    const more = $("more");
    if (!state.list.length) more.replaceChildren(h("div", {class: "empty"}, "No case matches these filters."));
    else if (end < state.list.length) {
      more.replaceChildren(h("button", {type: "button", onclick: appendChunk}, `Show more (${fmt(state.list.length - end)} left)`));
    } else more.replaceChildren();
    requestAnimationFrame(() => { observer.unobserve(more); observer.observe(more); });
  }

  const observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting) && state.shown < state.list.length) appendChunk();
  }, {rootMargin: "600px"});

  function renderStatus() {
    const chips = [...state.outcomes].map((o) => h("span", {class: `chip o-${o}`, title: "drop this filter",
      onclick: () => { state.outcomes.delete(o); refresh(); }}, `${o} ×`));
    if (state.suite !== null) {
      chips.push(h("span", {class: "chip", title: "drop this filter", onclick: () => { state.suite = null; refresh(); }},
        `suite: ${SUITES[state.suite].name} ×`));
    }
    $("filters").replaceChildren(...chips);
    $("count").textContent = `${fmt(state.list.length)} of ${fmt(CASES.length)} cases`;
  }

  // ---- one case ---------------------------------------------------------------------------

  function duration(seconds) {
    if (typeof seconds !== "number") return "—";
    return seconds < 1 ? `${(seconds * 1000).toFixed(seconds < 0.01 ? 2 : 1)} ms` : `${seconds.toFixed(2)} s`;
  }

  function caseEl(i) {
    const {c, si} = CASES[i];
    const open = state.open.has(i);
    const tokens = c.trajectory?.usage?.total_tokens;
    const head = h("div", {class: "head", role: "button", tabindex: "0", "aria-expanded": String(open)},
      h("span", {class: "caret"}, "▸"),
      h("span", {class: `badge o-${c.outcome}`}, WORDS[c.outcome] || c.outcome),
      h("span", {class: "cname", title: c.id}, h("span", {class: "csuite"}, SUITES[si].name),
        c.name, c.baseline ? h("span", {class: c.baseline === "new" ? "tag bad" : "tag",
          "data-baseline": c.baseline, title: baselineText(c.baseline)}, c.baseline) : null,
        c.repeats?.flaky ? h("span", {class: "tag bad", "data-flaky": "", title: FLAKY}, "flaky") : null),
      h("span", {class: "cmsg"}, c.outcome === "passed" ? "" : c.message),
      h("span", {class: "cmeta"}, tokens != null ? `${fmt(tokens)} tok · ` : "",
        c.bulk ? `${fmt(c.bulk.records)} records · ` : "", duration(c.duration)));
    const sec = h("section", {class: `case o-${c.outcome}${open ? " open" : ""}`, "data-idx": i, "data-outcome": c.outcome}, head);
    head.addEventListener("click", () => setOpen(sec, !state.open.has(i)));
    head.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); setOpen(sec, !state.open.has(i)); }
    });
    if (open) sec.append(caseBody(c));
    return sec;
  }

  function setOpen(sec, open) {
    const i = Number(sec.dataset.idx);
    open ? state.open.add(i) : state.open.delete(i);
    sec.classList.toggle("open", open);
    sec.firstChild.setAttribute("aria-expanded", String(open));
    const body = sec.querySelector(":scope > .body");
    if (body) body.hidden = !open;
    else if (open) sec.append(caseBody(CASES[i].c));
  }

  function caseBody(c) {
    const body = h("div", {class: "body"});
    if (c.message && c.outcome !== "passed") body.append(h("p", {class: "message"}, c.message));
    body.append(h("p", {class: "where mono"}, c.line ? `${c.file}:${c.line}` : c.file, "  ·  ", c.id));
    if (c.baseline) body.append(h("p", {class: "where"}, baselineText(c.baseline)));
    const drawn = new Set([c.steps ? "steps" : null, c.judge ? "judge" : null]);  // shown in full below
    const items = [
      ...(c.checks || []).map((k) => h("li", {"data-check": k.check}, h("b", null, k.check), k.summary ? `: ${k.summary}` : "",
        typeof k.detail === "string" && k.detail && !drawn.has(k.check) ? h("pre", {class: "detail"}, k.detail) : null)),
      ...(c.errors || []).filter((e) => e !== c.message).map((e) => h("li", {class: "err"}, e)),
      ...(c.notes || []).map((n) => h("li", {class: "note"}, `note: ${n}`)),
    ];
    if (items.length) body.append(h("ul", {class: "checks"}, items));
    if (c.judge) body.append(judgeEl(c.judge));
    if (c.bulk) body.append(bulkEl(c.bulk));
    if (c.repeats) body.append(repeatsEl(c.repeats));
    const table = c.trajectory || c.steps ? timeline(c) : null;
    if (table) body.append(table);
    body.append(facts(c));
    if (c.trajectory?.answer != null) body.append(fold(c.trajectory.answer, "answer", null, {}));
    if (c.details) {
      const shown = c.steps || (c.checks || []).length;  // the table, or each check's detail in the list above
      body.append(h("details", {class: "text", open: !shown && c.outcome !== "passed"},
        h("summary", null, "Details as trajrun run prints them"), h("pre", null, c.details)));
    }
    return body;
  }

  /** The LLM judge's verdict: score against threshold, model, and its reasoning (or why there is none). */
  function judgeEl(j) {
    if (j.skipped != null) return h("div", {class: "judge j-skipped"}, h("b", null, "judge"), ` skipped (${j.skipped})`);
    if (j.score == null) return h("div", {class: "judge j-error"}, h("b", null, "judge"), ` error: ${j.error || "no score"}`);
    const head = `${Number(j.score).toFixed(2)} ${j.passed ? "≥" : "<"} ${Number(j.threshold).toFixed(2)}`;
    const who = [j.model, j.cached ? "cached" : null].filter(Boolean).join(", ");
    return h("div", {class: `judge ${j.passed ? "j-pass" : "j-fail"}`},
      h("b", null, "judge"), " score ", h("span", {class: "j-score"}, head), who ? ` (${who})` : "",
      j.reasoning ? h("p", {class: "j-reasoning"}, j.reasoning) : null);
  }

  /** A bulk case: records per outcome as a bar, failures by check, and the first failing records. */
  function bulkEl(b) {
    const counts = {passed: b.passed, failed: b.failed, error: b.error};
    const share = b.records ? `${(100 * b.passed / b.records).toFixed(2)}% passed` : "no records";
    const rate = b.pass_rate < 1 ? ` (pass_rate ${b.pass_rate})` : "";
    const checks = Object.entries(b.by_check || {});
    const worst = b.worst || [];
    return h("div", {class: "bulk"},
      h("p", null, h("b", null, `${fmt(b.records)} records`), ` from ${fmt(b.files)} file${b.files === 1 ? "" : "s"} · `,
        `${fmt(b.passed)} passed · ${fmt(b.failed)} failed · ${fmt(b.error)} erred · ${share}${rate}`),
      b.records ? bar(counts, b.records) : null,
      checks.length ? h("table", {class: "bulk-checks"}, h("thead", null, h("tr", null, h("th", null, "failed check"), h("th", null, "records"))),
        h("tbody", null, checks.map(([label, n]) => h("tr", null, h("td", {class: "mono"}, label), h("td", {class: "num"}, fmt(n)))))) : null,
      worst.length ? h("table", {class: "bulk-worst"},
        h("caption", null, worst.length < b.failed + b.error ? `first ${worst.length} failing records` : "failing records"),
        h("thead", null, h("tr", null, ["record", "outcome", "message"].map((t) => h("th", null, t)))),
        h("tbody", null, worst.map((r) => h("tr", {class: `o-${r.outcome}`},
          h("td", {class: "mono"}, r.record), h("td", null, h("span", {class: `badge o-${r.outcome}`}, WORDS[r.outcome] || r.outcome)),
          h("td", null, r.message))))) : null);
  }

  /** `repeat`: pass@k, pass^k and the checks that flipped, then each run's outcome and message. */
  function repeatsEl(r) {
    const k = r.runs, yes = (b) => (b ? "yes" : "no");
    const flipped = (r.flipped || []).length ? ` · flipped: ${r.flipped.join(", ")}` : "";
    return h("div", {class: "repeats"},
      h("p", null, h("b", null, "repeat"), ` ${fmt(r.passed)}/${fmt(k)} runs passed · pass@${k} ${yes(r.pass_at_k)}`,
        ` · pass^${k} ${yes(r.pass_all_k)}`, r.flaky ? " · flaky" : "", flipped),
      h("ol", {class: "runs"}, (r.outcomes || []).filter((o) => o && typeof o === "object").map((o) => h("li", {"data-outcome": o.outcome},
        h("span", {class: `badge o-${o.outcome}`}, WORDS[o.outcome] || o.outcome),
        o.outcome === "passed" ? "" : ` ${o.message}`))));
  }

  function facts(c) {
    const t = c.trajectory;
    const items = [];
    if (t) {
      const u = t.usage;
      items.push(["format", t.format], ["turns", t.turns], ["calls", (t.tool_calls || []).length],
        ["tokens", u ? `${fmt(u.input_tokens)} in · ${fmt(u.output_tokens)} out · ${fmt(u.total_tokens)} total` : "not recorded"]);
    }
    items.push(["duration", duration(c.duration)]);
    if (c.score != null) items.push(["score", Number(c.score).toFixed(2)]);
    if (c.judge?.score != null) items.push(["judge", Number(c.judge.score).toFixed(2)]);
    if (c.steps?.mode) items.push(["mode", c.steps.mode]);
    return h("div", {class: "facts"}, items.map(([k, v]) => h("span", null, `${k} `, h("b", null, fmt(v)))));
  }

  // ---- the timeline: expected steps beside actual calls, grouped by turn --------------------

  function timeline(c) {
    const calls = c.trajectory?.tool_calls || [];
    const st = c.steps;
    const withSteps = Array.isArray(st?.expected);
    const rows = withSteps ? stepRows(st, calls.length) : plainRows(c, calls.length);
    if (!rows.length) return h("p", {class: "note"}, withSteps ? "No tool calls and no expected steps." : "No tool calls.");
    const flags = callFlags(c.checks, calls);
    for (const r of rows) {
      if (FORBIDDEN_OVER.has(r.verdict) && flags.get(r.call)?.some((f) => f.check === "never")) r.verdict = "forbidden";
    }
    const sides = withSteps || rows.some((r) => r.label != null || r.verdict === "forbidden");
    const ctx = {steps: withSteps ? st.expected : [], calls, sides, flags};
    const blocks = byTurn(rows, calls);
    const tbody = h("tbody");
    const cols = ctx.sides ? [["turn", "c-turn"], ["expected", "c-exp"], ["verdict", "c-verdict"], ["actual", "c-act"]]
      : [["turn", "c-turn"], ["calls (no steps check)", "c-act"]];
    const table = h("table", {class: "timeline"},
      withSteps ? h("caption", null, `steps (${st.mode}): `, st.passed ? "passed" : st.summary || "failed") : null,
      h("colgroup", null, cols.map(([, k]) => h("col", {class: k}))),
      h("thead", null, h("tr", null, cols.map(([t]) => h("th", null, t)))),
      tbody);
    let done = fillRows(tbody, blocks, ctx, 0);
    if (done >= rows.length) return table;
    const more = h("button", {type: "button", class: "show-rows"});
    const label = () => { more.textContent = `Show ${fmt(Math.min(ROWS, rows.length - done))} more rows (${fmt(rows.length - done)} left)`; };
    more.addEventListener("click", () => { done = fillRows(tbody, blocks, ctx, done); done >= rows.length ? more.remove() : label(); });
    label();
    return h("div", null, table, more);
  }

  /** The calls failed ``never`` and ``before`` checks are about, read from each check's detail lines: position ->
   *  [{check, text}] for a forbidden call, and for the earliest call of ``a`` and the latest of ``b`` in ``[a, b]``. */
  function callFlags(checks, calls) {
    const flags = new Map();
    const flag = (pos, check, label) => flags.set(pos, [...(flags.get(pos) || []), {check, text: label}]);
    for (const k of Array.isArray(checks) ? checks : []) {
      for (const line of typeof k?.detail === "string" ? k.detail.split("\n") : []) {
        const hit = k.check === "never" && / called at turn \d+, position (\d+)$/.exec(line);
        if (hit) flag(Number(hit[1]), "never", "forbidden by never");
        const order = k.check === "before" && /^(.+) before (.+): first \1 at turn (\d+), last \2 at turn (\d+)$/.exec(line);
        if (!order) continue;
        calls.forEach((call, pos) => {
          const end = call?.name === order[1] && call.turn === Number(order[3]) || call?.name === order[2] && call.turn === Number(order[4]);
          if (end) flag(pos, "before", `${order[1]} must come before ${order[2]}`);
        });
      }
    }
    return flags;
  }

  /** Rows as the console table orders them: by actual position, a missing step after the step before it. */
  function stepRows(st, nCalls) {
    const pairs = st.pairs || [];
    const paired = new Set(pairs.map((p) => p.step));
    const taken = new Set(pairs.map((p) => p.call));
    const rows = pairs.map((p) => ({step: p.step, call: p.call, verdict: "ok"}));
    const used = new Set(), combined = new Set(), nearBy = new Map();
    for (const n of st.nearest || []) {
      nearBy.set(n.step, n);
      if (n.call != null && !used.has(n.call) && !taken.has(n.call)) {
        used.add(n.call);
        combined.add(n.step);
        rows.push({step: n.step, call: n.call, verdict: nearVerdict(n), near: n});
      }
    }
    const absentOk = st.mode === "subset", extraOk = st.mode === "superset" || st.mode === "in_order";
    st.expected.forEach((_, i) => {
      if (!paired.has(i) && !combined.has(i)) rows.push({step: i, call: null, verdict: absentOk ? "not called" : "MISSING", near: nearBy.get(i)});
    });
    for (let p = 0; p < nCalls; p++) if (!taken.has(p) && !used.has(p)) rows.push({step: null, call: p, verdict: extraOk ? "extra" : "UNEXPECTED"});
    const anchors = rows.filter((r) => r.step != null && r.call != null).map((r) => [r.step, r.call]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const r of rows) {
      if (r.call != null) r.key = [r.call, 0, r.step ?? -1];
      else {
        let before = 0;
        while (before < anchors.length && anchors[before][0] < r.step) before++;
        r.key = [before ? anchors[before - 1][1] : -1, 1, r.step];
      }
    }
    return rows.sort((a, b) => a.key[0] - b.key[0] || a.key[1] - b.key[1] || a.key[2] - b.key[2]);
  }

  function nearVerdict(n) {
    const first = n.diffs?.[0];
    if (!first) return n.note ? "other turn" : "out of order";
    return first.startsWith("result") ? "result differs" : first.startsWith("error") ? "error differs" : "args differ";
  }

  /** Rows without a steps check (or from a report older than ``steps``): the calls, and listed misses. */
  function plainRows(c, nCalls) {
    const unexpected = new Set((c.unexpected || []).map((u) => u.call).filter(Number.isInteger));
    const rows = [];
    for (let p = 0; p < nCalls; p++) rows.push({step: null, call: p, verdict: unexpected.has(p) ? "UNEXPECTED" : ""});
    if (c.steps === undefined) {
      for (const m of c.missing || []) rows.push({step: null, call: null, label: m.expected ?? text(m), verdict: "MISSING"});
    }
    return rows;
  }

  function byTurn(rows, calls) {
    const blocks = [];
    let cur = null;
    for (const r of rows) {
      const turn = r.call != null ? calls[r.call]?.turn ?? null : cur ? cur.turn : null;
      if (!cur || turn !== cur.turn) blocks.push((cur = {turn, rows: [], calls: 0}));
      cur.rows.push(r);
      if (r.call != null) cur.calls++;
    }
    return blocks;
  }

  /** Render up to ROWS rows from flat position ``start``; returns the position reached. */
  function fillRows(tbody, blocks, ctx, start) {
    const end = start + ROWS;
    let k = 0;
    for (const b of blocks) {
      const from = Math.max(start - k, 0), to = Math.min(end - k, b.rows.length);
      if (from < to) renderBlock(tbody, b, b.rows.slice(from, to), ctx, from > 0);
      k += b.rows.length;
      if (k >= end) return end;
    }
    return k;
  }

  function renderBlock(tbody, block, rows, ctx, continued) {
    const trs = rows.flatMap((r) => rowEls(r, ctx));
    const parallel = block.calls > 1;
    const label = block.turn == null ? "" : `turn ${block.turn}${continued ? " (cont.)" : ""}`;
    trs[0].prepend(h("td", {class: `turn${parallel ? " par" : ""}`, rowspan: trs.length}, label,
      parallel ? h("span", {class: "par-n"}, `${block.calls} calls in parallel`) : null));
    trs[0].classList.add("block-start");
    tbody.append(...trs);
  }

  function rowEls(r, ctx) {
    const marks = r.near ? diffMarks(r.near.diffs) : null;
    const exp = h("td", {class: "exp"});
    if (r.step != null) exp.append(stepView(ctx.steps[r.step], r.step, marks));
    else if (r.label != null) exp.append(h("span", {class: "mono"}, r.label));
    else exp.append(h("span", {class: "note"}, r.verdict === "UNEXPECTED" ? "no step expects this call"
      : r.verdict === "forbidden" ? "never forbids this tool" : ""));
    const act = h("td", {class: "act"});
    if (r.call != null) act.append(callView(ctx.calls[r.call], r.call, marks, ctx.flags.get(r.call)));
    else act.append(r.near?.note || (r.verdict === "MISSING" ? "no call satisfied this step" : ""));
    const verdict = h("td", {class: "verdict"}, r.verdict ? h("span", {class: "v"}, r.verdict) : "");
    const tr = h("tr", {class: VERDICT_CLASS[r.verdict] || "r-differ", "data-verdict": r.verdict}, ctx.sides ? [exp, verdict] : null, act);
    if (r.call == null || !r.near || (!r.near.diffs?.length && !r.near.note)) return [tr];
    return [tr, h("tr", {class: "diffs"}, h("td", {colspan: "3"}, diffList(r.near)))];
  }

  function diffList(near) {
    const items = (near.diffs || []).map((line) => {
      const m = /^(.*?)(: (?:expected|compare) [\s\S]*)$/.exec(line);
      if (!m) return h("li", null, line);
      return h("li", null, h("span", {class: "path"}, m[1]), parted(m[2]));
    });
    if (near.note) items.push(h("li", {class: "note"}, near.note));
    return h("ul", {class: "difflist"}, items);
  }

  /** The rest of a diff line on long texts (``: expected …'to Lisbon.', got …'to Lisboa.'
   *  (differs at character 212)``) with each side's text from where they part marked; any other
   *  line as it is. */
  function parted(rest) {
    const m = PARTED.exec(rest);
    if (!m) return rest;
    const [, expHead, exp, expTail, actHead, act, actTail, where] = m;
    const a = exp.slice(1, -1), b = act.slice(1, -1);
    let same = 0;
    while (same < a.length && a[same] === b[same]) same++;
    const side = (quoted, inner) => [quoted[0], inner.slice(0, same),
      same < inner.length ? h("mark", {class: "part"}, inner.slice(same)) : null, quoted[0]];
    return [": expected ", expHead, side(exp, a), expTail, ", got ", actHead, side(act, b), actTail,
      " ", h("span", {class: "where"}, `(${where})`)];
  }

  function stepView(step, i, marks) {
    if (!step) return h("span", {class: "idx"}, `#${i}`);
    const name = marks?.name ? h("mark", null, step.name) : step.name;
    return h("div", null, h("span", {class: "idx"}, `#${i}`), h("span", {class: "callname"}, name),
      step.group != null ? h("span", {class: "tag grp"}, `parallel group ${step.group}`) : null,
      step.error != null ? h("span", {class: `tag${marks?.error ? " bad" : ""}`}, step.error ? "expects an error" : "expects no error") : null,
      step.any_args ? h("span", {class: "tag"}, "any arguments") : fold(step.args, "args", marks?.args, {expected: true}),
      step.expects_result ? fold(step.result, "result", marks?.result, {expected: true}) : null);
  }

  function callView(call, pos, marks, flags) {
    if (!call) return h("span", {class: "idx"}, `[${pos}]`);
    const name = marks?.name ? h("mark", null, call.name) : call.name;
    const hasResult = call.result != null || call.has_result;
    return h("div", null, h("span", {class: "idx"}, `[${pos}]`), h("span", {class: "callname", title: call.id ? `id ${call.id}` : null}, name),
      call.error ? h("span", {class: "errflag"}, "tool error") : null,
      (flags || []).map((f) => h("span", {class: "tag bad", "data-check": f.check}, f.check === "never" ? f.text : `${f.check}: ${f.text}`)),
      fold(call.args, "args", marks?.args, {}),
      hasResult ? fold(call.result, "result", marks?.result, {decode: true}) : null);
  }

  // ---- folded values with the differing fields marked -------------------------------------

  /** The fields a nearest pair's diff lines name: JSONPath segments under args and result. */
  function diffMarks(diffs) {
    const out = {args: [], result: [], name: false, error: false};
    for (const line of diffs || []) {
      const path = /^(.*?): (?:expected|compare) /.exec(line)?.[1];
      if (path == null) continue;
      if (path === "name") out.name = true;
      else if (path === "error") out.error = true;
      else if (path.startsWith("$")) out.args.push(parsePath(path.slice(1)));
      else if (path.startsWith("result")) out.result.push(parsePath(path.slice(6)));
    }
    return out;
  }

  function parsePath(rest) {
    const re = /\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]/y;
    const segs = [];
    let m;
    while (re.lastIndex < rest.length && (m = re.exec(rest))) {
      segs.push(m[1] ?? (m[2] != null ? Number(m[2]) : (m[3] ?? m[4]).replace(/\\(.)/g, "$1")));
    }
    return segs;
  }

  /** What to highlight in ``value`` for each path: the node it names (``marks``), or, for a field the object
   *  lacks, an ``"key": absent`` entry shown in that object (``ghosts``); else the deepest node reached. */
  function markKeys(value, paths) {
    if (!paths?.length) return null;
    const marks = new Set(), ghosts = new Map();
    for (const segs of paths) {
      let node = value, depth = 0;
      while (depth < segs.length && node !== null && typeof node === "object" && Object.hasOwn(node, segs[depth])) node = node[segs[depth++]];
      const at = JSON.stringify(segs.slice(0, depth));
      const lacks = depth === segs.length - 1 && typeof segs[depth] === "string" && node !== null && typeof node === "object" && !Array.isArray(node);
      if (lacks) ghosts.set(at, [...(ghosts.get(at) || []), segs[depth]]);
      else marks.add(at);
    }
    return {marks, ghosts};
  }

  function decodeJson(textValue) {
    const t = textValue.trimStart();
    if (!(t.startsWith("{") || t.startsWith("["))) return undefined;
    try { return JSON.parse(textValue); } catch { return undefined; }
  }

  /** A value on one line (cut with …), expanded to indented JSON or wrapped text by a click.
   *  ``decode`` reads JSON text as its value (as trajrun compares results); ``expected`` styles matchers. */
  function fold(value, label, paths, {decode = false, expected = false}) {
    let v = value;
    if (typeof v === "string" && decode) v = decodeJson(v) ?? v;
    const raw = typeof v === "string";
    const marks = raw ? null : markKeys(v, paths);
    const one = h("code", {class: "one"}, h("span", {class: "lbl"}, label));
    if (raw) one.append(v);
    else writeJson(one, v, [], marks, null, expected);
    const el = h("span", {class: "fold", title: "click to expand"}, one);
    el.addEventListener("click", () => {
      if (String(window.getSelection()).length) return;
      const pre = el.querySelector("pre");
      if (pre) { pre.remove(); one.hidden = false; el.title = "click to expand"; return; }
      const full = h("pre", null, h("span", {class: "lbl"}, label));
      if (raw) full.append(v);
      else writeJson(full, v, [], marks, "", expected);
      one.hidden = true;
      el.title = "click to fold";
      el.append(full);
    });
    return el;
  }

  /** JSON into ``parent`` as coloured text; ``ind`` null for one line, else the current indent; marked paths highlighted. */
  function writeJson(parent, v, path, marks, ind, expected) {
    if (ind === null && !marks) {
      const flat = JSON.stringify(v);
      if (flat !== undefined && flat.length > BIG) { parent.append(flat); return; }
    }
    const here = marks ? JSON.stringify(path) : null;
    if (marks?.marks.has(here)) {
      const m = h("mark", {title: pathText(path)});
      parent.append(m);
      parent = m;
      marks = null;
    }
    if (v === null || typeof v !== "object") { parent.append(scalar(v, expected)); return; }
    const isArray = Array.isArray(v);
    const entries = isArray ? v.map((x, i) => [i, x]) : Object.entries(v);
    const absent = marks?.ghosts.get(here) || [];
    if (!entries.length && !absent.length) { parent.append(isArray ? "[]" : "{}"); return; }
    const inner = ind === null ? null : `${ind}  `;
    parent.append(isArray ? "[" : "{");
    entries.forEach(([k, x], n) => {
      if (n) parent.append(",");
      if (inner !== null) parent.append(`\n${inner}`);
      const childPath = path.concat([k]);
      let target = parent;
      if (marks?.marks.has(JSON.stringify(childPath))) {
        target = h("mark", {title: pathText(childPath)});
        parent.append(target);
      }
      if (!isArray) target.append(h("span", {class: "j-key"}, JSON.stringify(k)), inner === null ? ":" : ": ");
      writeJson(target, x, childPath, target === parent ? marks : null, inner, expected);
    });
    absent.forEach((k, n) => {
      if (n || entries.length) parent.append(",");
      if (inner !== null) parent.append(`\n${inner}`);
      parent.append(h("mark", {class: "ghost", title: `${pathText([...path, k])} is absent here`}, JSON.stringify(k), ": absent"));
    });
    if (inner !== null) parent.append(`\n${ind}`);
    parent.append(isArray ? "]" : "}");
  }

  function scalar(v, expected) {
    if (typeof v === "string") {
      const matcher = expected && /^<.+>$/s.test(v);
      return h("span", {class: matcher ? "j-m" : "j-str"}, matcher ? v : JSON.stringify(v));
    }
    return h("span", {class: typeof v === "number" ? "j-num" : "j-lit"}, JSON.stringify(v) ?? String(v));
  }

  const pathText = (segs) => "$" + segs.map((s) => (typeof s === "number" ? `[${s}]` : IDENT.test(s) ? `.${s}` : `['${s}']`)).join("");

  // ---- start -------------------------------------------------------------------------------

  let typing = 0;
  $("search").addEventListener("input", (e) => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.terms = e.target.value.toLowerCase().split(/\s+/).filter(Boolean); refresh(); }, 120);
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && document.activeElement?.tagName !== "INPUT") { e.preventDefault(); $("search").focus(); }
  });
  const openAll = (open) => {
    for (const i of state.list) open ? state.open.add(i) : state.open.delete(i);
    document.querySelectorAll("#cases > .case").forEach((sec) => setOpen(sec, open));
  };
  $("expand").addEventListener("click", () => openAll(true));
  $("collapse").addEventListener("click", () => openAll(false));
  renderLoadErrors();
  refresh();
  window.trajrunReady = performance.now();
  document.documentElement.setAttribute("data-ready", "");
})();
