"use strict";
// The report's script: sortable leaderboard, episode filters and pages, and the transcript
// viewer, which unpacks one episode's gzip JSON (DecompressionStream) when it is opened.
(function () {
  const DATA = JSON.parse(document.getElementById("gem-data").textContent);
  let TRANSCRIPTS = null; // parsed on the first opened episode
  const PAGE = 50;
  const F = {};
  DATA.fields.forEach((name, i) => { F[name] = i; });
  const KEYS = new Set(["model", "task_id", "category", "run_id"]);
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined) node.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : String(c));
    }
    return node;
  }
  // A leaderboard's cell as `gem-eval leaderboard` prints it (format_value): its "turns" is
  // a mean, with one decimal; an episode's turns, tool calls and tokens are counts.
  const COUNTS = new Set(["turns", "tool_calls", "tokens", "sample", "epoch"]);
  function fmt(col, v) {
    if (v === null || v === undefined) return "-";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v) && !/score|ci_|acc|pass|se$|cost|turns/.test(col)) return v.toLocaleString("en");
    const digits = col === "turns" ? 1 : col === "cost_usd" ? 4 : 3;
    return v.toFixed(digits);
  }
  function fmtEpisode(col, v) {
    return COUNTS.has(col) && Number.isInteger(v) ? v.toLocaleString("en") : fmt(col, v);
  }
  function when(seconds) {
    if (!seconds) return "";
    const d = new Date(seconds * 1000), pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }
  function swatch(model) {
    const colour = DATA.colours[model];
    return colour ? el("span", { class: "swatch", style: "background:" + colour }) : null;
  }

  // --- runs
  $("runs").append(...DATA.runs.map((r) => el("div", { class: "run", "data-role": r.role },
    DATA.runs.length > 1 ? el("b", { class: "role-" + (r.role || "run") }, r.label + " ") : null,
    el("code", {}, r.run_id), ` suite ${r.suite}, ${r.status}, ${r.episodes_done}/${r.episodes_planned} episodes, `,
    r.started_at ? `started ${when(r.started_at)}, ` : "", "models: ",
    (r.models || []).map((m) => m.name || m).join(", "))));

  // --- leaderboard
  let sortCol = null, sortDir = -1;
  function drawBoard() {
    const rows = (DATA.boards[$("board-by").value] || []).slice();
    const cols = rows.length ? Object.keys(rows[0]) : [];
    if (sortCol !== null && cols.includes(sortCol)) {
      rows.sort((a, b) => {
        const x = a[sortCol], y = b[sortCol];
        if (x === y) return 0;
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -1 : 1) * sortDir;
      });
    }
    const head = el("tr", {}, ...cols.map((c) => {
      const th = el("th", { "data-col": c, class: (KEYS.has(c) ? "key " : "") +
        (c === sortCol ? (sortDir > 0 ? "sorted-asc" : "sorted-desc") : "") }, c);
      th.addEventListener("click", () => {
        sortDir = sortCol === c ? -sortDir : (KEYS.has(c) ? 1 : -1);
        sortCol = c;
        drawBoard();
      });
      return th;
    }));
    const body = rows.map((r) => el("tr", {}, ...cols.map((c) => el("td",
      { "data-col": c, "data-value": JSON.stringify(r[c]), class: KEYS.has(c) ? "key" : null },
      c === "model" ? swatch(r[c]) : null, fmt(c, r[c]), c === "model" ? failuresLink(r) : null))));
    $("board").replaceChildren(el("thead", {}, head), el("tbody", {}, ...body));
  }
  function failuresLink(r) { // one click from a leaderboard row to its failed episodes
    const a = el("a", { href: "#episodes", class: "failures", title: "its episodes scored below 1" }, "failures");
    a.addEventListener("click", () => {
      $("f-run").value = r.run_id !== undefined ? r.run_id : "";
      $("f-model").value = r.model;
      $("f-task").value = r.task_id !== undefined ? r.task_id : "";
      $("f-outcome").value = "";
      $("f-score").value = "fail";
      $("f-key").value = "";
      page = 0;
      drawEpisodes();
    });
    return a;
  }
  $("board-by").addEventListener("change", () => { sortCol = null; drawBoard(); });
  drawBoard();

  // --- episode list
  const episodes = DATA.episodes.map((row, i) => ({ row, i }));
  function fill(select, values) {
    for (const v of [...new Set(values)].sort()) select.append(el("option", { value: v }, v));
  }
  fill($("f-run"), DATA.episodes.map((r) => r[F.run_id]));
  fill($("f-model"), DATA.episodes.map((r) => r[F.model]));
  fill($("f-task"), DATA.episodes.map((r) => r[F.task_id]));
  fill($("f-outcome"), DATA.episodes.map((r) => r[F.outcome]));
  let page = 0;
  function matches(row) {
    const model = $("f-model").value, task = $("f-task").value, outcome = $("f-outcome").value;
    const score = $("f-score").value, key = $("f-key").value, run = $("f-run").value;
    const s = row[F.score];
    if (run && row[F.run_id] !== run) return false;
    if (model && row[F.model] !== model) return false;
    if (task && row[F.task_id] !== task) return false;
    if (outcome && row[F.outcome] !== outcome) return false;
    if (key && !row[F.key].includes(key)) return false;
    if (score === "fail" && !(s !== null && s < 1)) return false;
    if (score === "zero" && s !== 0) return false;
    if (score === "pass" && s !== 1) return false;
    if (score === "none" && s !== null) return false;
    return true;
  }
  const SHOWN = ["run_id", "model", "task_id", "sample", "epoch", "outcome", "score", "turns",
    "tool_calls", "tokens", "cost_usd", "latency_s"];
  function drawEpisodes() {
    const hits = episodes.filter((e) => matches(e.row));
    const pages = Math.max(1, Math.ceil(hits.length / PAGE));
    page = Math.min(page, pages - 1);
    $("f-count").textContent = `${hits.length} of ${episodes.length} episodes`;
    $("page").textContent = `page ${page + 1} of ${pages}`;
    const head = el("tr", {}, ...SHOWN.map((c) => el("th", { class: KEYS.has(c) ? "key" : null }, c)));
    const body = hits.slice(page * PAGE, (page + 1) * PAGE).map((e) => {
      const tr = el("tr", { "data-episode": e.i, "data-key": e.row[F.key] }, ...SHOWN.map((c) =>
        el("td", { class: KEYS.has(c) ? "key" : null }, c === "model" ? swatch(e.row[F.model]) : null,
          fmtEpisode(c, e.row[F[c]]))));
      tr.addEventListener("click", () => openEpisode(e.i, tr));
      return tr;
    });
    $("episode-list").replaceChildren(el("thead", {}, head), el("tbody", {}, ...body));
  }
  for (const id of ["f-run", "f-model", "f-task", "f-outcome", "f-score", "f-key"]) {
    $(id).addEventListener("input", () => { page = 0; drawEpisodes(); });
  }
  $("prev").addEventListener("click", () => { page = Math.max(0, page - 1); drawEpisodes(); });
  $("next").addEventListener("click", () => { page += 1; drawEpisodes(); });
  drawEpisodes();

  // --- one episode
  async function unpack(b64) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  function folded(text, label) {
    text = text === null || text === undefined ? "" : String(text);
    const lines = text.split("\n").length;
    if (text.length <= 800 && lines <= 20) return el("pre", {}, text);
    const d = el("details", { class: "fold" },
      el("summary", {}, `${label || "output"}: ${text.length.toLocaleString("en")} characters, ${lines} lines`),
      el("pre", {}, text));
    return d;
  }
  function slice(content, at) { // Python slices code points; JS strings count UTF-16 units
    return Array.from(content).slice(at[1], at[2]).join("");
  }
  function pretty(args) {
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch (err) { return String(args); }
  }
  function messageView(m) {
    const role = m.role || "?";
    const box = el("div", { class: "msg " + role }, el("div", { class: "role" },
      role + (m.name ? ` (${m.name})` : "") + (m.tool_call_id ? ` \u2190 ${m.tool_call_id}` : "")));
    let content = m.content;
    if (Array.isArray(content)) content = content.map((p) => p.text || JSON.stringify(p)).join("\n");
    if (content) box.append(role === "tool" ? folded(content, "tool output") : folded(content, "message"));
    for (const call of m.tool_calls || []) {
      const fn = call.function || call;
      box.append(el("div", { class: "tool-call", "data-tool": fn.name },
        el("b", {}, "\u2192 " + fn.name), " ", el("code", {}, call.id || ""),
        el("pre", {}, pretty(fn.arguments))));
    }
    return box;
  }
  function stepsView(t) {
    const head = el("tr", {}, ...["turn", "reward", "return-to-go", "tool calls", "observation",
      "tokens in/out", "latency s", "end"].map((c) => el("th", {}, c)));
    const rows = (t.steps || []).map((s, i) => {
      const calls = (s.tool_events || []).map((e) => {
        const out = e.output !== undefined ? e.output :
          (e.output_at ? slice(t.messages[e.output_at[0]].content, e.output_at) : "");
        return el("div", { class: "tool-call", "data-tool": e.name },
          el("b", { class: e.is_error ? "bad" : null }, e.name), ` ${fmt("latency_s", e.latency_s)} s`,
          el("pre", {}, pretty(e.arguments)), folded(out, "output"));
      });
      const u = (s.output && s.output.usage) || {};
      return el("tr", { class: "step" }, el("td", {}, s.index), el("td", {}, fmt("r", s.reward)),
        el("td", {}, fmt("r", (t.returns || [])[i])), el("td", { class: "key" }, ...calls),
        el("td", { class: "key observation" }, hasText(s.observation) ? folded(s.observation, "observation") : null),
        el("td", {}, `${u.input_tokens || 0}/${u.output_tokens || 0}`),
        el("td", {}, fmt("latency_s", s.output && s.output.latency_s)),
        el("td", {}, s.terminated ? "terminated" : s.truncated ? "truncated" : ""));
    });
    return el("table", { class: "steps" }, el("thead", {}, head), el("tbody", {}, ...rows));
  }
  function hasText(v) { return v !== null && v !== undefined && v !== ""; }
  // The env's replies the model never read (the last one above all: "Out of turns",
  // "No final answer found"): every step's observation that no message holds.
  function unreadObservations(t) {
    const read = new Set((t.messages || []).filter((m) => m.role !== "assistant").map((m) => m.content));
    return (t.steps || []).filter((s) => hasText(s.observation) && !read.has(s.observation));
  }
  // --- an agent program's episode: its own turns (Terminus-2: analysis, plan, keystrokes,
  // the screen after) and its terminal recordings (asciicast v2), replayed in a <pre>.
  function agentView(t) {
    const run = t.agent_run;
    const head = [`${t.agent || "agent"}${run.version ? " " + run.version : ""}`,
      `setup ${fmt("latency_s", run.setup_s)} s`, `run ${fmt("latency_s", run.run_s)} s`];
    if (run.timed_out) head.push("timed out");
    if (run.provided && run.provided.length) head.push(`gem-eval brought in ${run.provided.join(", ")}`);
    const rows = (run.turns || []).map((turn, i) => {
      const cells = [el("td", {}, i + 1)];
      if (turn.parse_error) {
        cells.push(el("td", { class: "key bad", colspan: 3 }, "reply not parsed: ", folded(turn.reply, "reply")));
      } else if (turn.source) {
        cells.push(el("td", { class: "key", colspan: 3 }, `${turn.source}: `, folded(turn.message, "message")));
      } else {
        const keys = (turn.commands || []).map((c) => `${c.keystrokes}`).join("");
        const calls = (turn.tool_calls || []).map((c) => `${c.name} ${JSON.stringify(c.arguments)}`).join("\n");
        cells.push(el("td", { class: "key" }, folded(turn.analysis, "analysis")),
          el("td", { class: "key" }, folded(turn.plan, "plan")),
          el("td", { class: "key keystrokes" }, keys || calls ? el("pre", {}, keys || calls) : null,
            turn.task_complete ? el("b", { class: "good" }, "task complete") : null));
      }
      cells.push(el("td", { class: "key observation" }, folded(turn.observation, "screen")));
      return el("tr", { class: "agent-turn" }, ...cells);
    });
    const headRow = el("tr", {}, ...["turn", "analysis", "plan", "keystrokes", "screen after"].map((c) => el("th", {}, c)));
    const box = el("div", { class: "agent-run" }, el("h4", {}, "Agent: " + head.join(", ")),
      el("table", { class: "agent-turns" }, el("thead", {}, headRow), el("tbody", {}, ...rows)));
    for (const [name, text] of Object.entries(t.casts || {})) box.append(castView(name, text));
    return box;
  }
  function castView(name, text) {
    const lines = text.split("\n").filter((l) => l.trim());
    let header = {};
    try { header = JSON.parse(lines[0]); } catch (err) { header = {}; }
    const out = [];
    for (const line of lines.slice(1)) {
      try { const e = JSON.parse(line); if (e[1] === "o") out.push(e); } catch (err) { /* a torn line */ }
    }
    const end = out.length ? out[out.length - 1][0] : 0;
    const screen = el("pre", { class: "cast-screen" });
    const slider = el("input", { type: "range", min: 0, max: out.length, value: out.length, "aria-label": "time" });
    const clock = el("span", { class: "cast-clock" });
    const draw = () => {
      const n = Number(slider.value);
      screen.textContent = terminalText(out.slice(0, n).map((e) => e[2]).join(""), header.width || 80, header.height || 24);
      clock.textContent = ` ${(n ? out[n - 1][0] : 0).toFixed(2)} / ${end.toFixed(2)} s `;
    };
    let timer = null;
    const play = el("button", { type: "button" }, "play");
    play.addEventListener("click", () => {
      clearTimeout(timer);
      if (Number(slider.value) >= out.length) slider.value = 0;
      const step = () => {
        const n = Number(slider.value);
        draw();
        if (n >= out.length) return;
        const wait = Math.min(1000, 1000 * (out[n][0] - (n ? out[n - 1][0] : 0)));
        timer = setTimeout(() => { slider.value = n + 1; step(); }, wait);
      };
      step();
    });
    slider.addEventListener("input", () => { clearTimeout(timer); draw(); });
    const link = el("a", { href: URL.createObjectURL(new Blob([text], { type: "application/x-asciicast" })), download: name },
      `download ${name}`);
    draw();
    return el("div", { class: "cast", "data-cast": name },
      el("h4", {}, `Terminal recording ${name} (${header.width || "?"}x${header.height || "?"})`),
      el("div", {}, play, slider, clock, link), screen);
  }
  // What a terminal shows after `data`: the escape sequences a shell's session uses
  // (cursor moves, erasing, clearing) applied; colours and modes ignored. The screen is
  // the last `height` rows; the clearing of scroll-back (ESC[3J) drops the rows above.
  function terminalText(data, width, height) {
    let rows = [[]], r = 0, c = 0, top = 0;
    const row = (i) => { while (rows.length <= i) rows.push([]); return rows[i]; };
    const down = () => { r += 1; row(r); top = Math.max(top, r - height + 1); };
    for (let i = 0; i < data.length; i++) {
      const ch = data[i];
      if (ch === "\x1b") {
        const kind = data[i + 1];
        if (kind === "[") {
          let j = i + 2;
          while (j < data.length && !/[@-~]/.test(data[j])) j++;
          const args = data.slice(i + 2, j).replace(/^[?>=]/, "").split(";").map((n) => parseInt(n, 10));
          const n = (k, d) => (Number.isNaN(args[k]) || args[k] === undefined ? d : args[k]);
          const cmd = data[j];
          i = j;
          if (cmd === "H" || cmd === "f") { r = top + n(0, 1) - 1; c = n(1, 1) - 1; row(r); }
          else if (cmd === "A") r = Math.max(top, r - n(0, 1));
          else if (cmd === "B") { r += n(0, 1); row(r); }
          else if (cmd === "C") c += n(0, 1);
          else if (cmd === "D") c = Math.max(0, c - n(0, 1));
          else if (cmd === "G") c = n(0, 1) - 1;
          else if (cmd === "K") { const line = row(r); if (n(0, 0) === 0) line.length = Math.min(line.length, c); else if (n(0, 0) === 2) rows[r] = []; else for (let k = 0; k <= c; k++) line[k] = " "; }
          else if (cmd === "J") {
            if (n(0, 0) === 3) { rows = rows.slice(top); r -= top; top = 0; }
            else if (n(0, 0) === 2) { rows = rows.slice(0, top); row(r); }
            else { row(r).length = Math.min(row(r).length, c); rows.length = r + 1; }
          }
        } else if (kind === "]") { // an OSC: up to BEL or ESC \
          let j = i + 2;
          while (j < data.length && data[j] !== "\x07" && !(data[j] === "\x1b" && data[j + 1] === "\\")) j++;
          i = data[j] === "\x07" ? j : j + 1;
        } else if (kind === "(" || kind === ")") i += 2;
        else i += 1;
      } else if (ch === "\r") c = 0;
      else if (ch === "\n") down();
      else if (ch === "\b") c = Math.max(0, c - 1);
      else if (ch === "\t") c = (Math.floor(c / 8) + 1) * 8;
      else if (ch >= " ") {
        if (c >= width) { c = 0; down(); }
        const line = row(r);
        while (line.length < c) line.push(" ");
        line[c] = ch;
        c += 1;
      }
    }
    return rows.slice(top, top + height).map((l) => l.join("").replace(/\s+$/, "")).join("\n").replace(/\n+$/, "");
  }
  async function openEpisode(i, tr) {
    document.querySelectorAll("#episode-list tr.open").forEach((r) => r.classList.remove("open"));
    if (tr) tr.classList.add("open");
    if (TRANSCRIPTS === null) TRANSCRIPTS = JSON.parse(document.getElementById("gem-transcripts").textContent);
    const t = await unpack(TRANSCRIPTS[i]);
    const rec = t.record || {};
    const last = (t.steps || []).length ? t.steps[t.steps.length - 1] : null;
    const meta = [["key", rec.key], ["run", rec.run_id], ["outcome", rec.outcome],
      ["score", fmt("score", rec.score)], ["success", fmt("", rec.success)], ["turns", rec.turns],
      ["tokens in/out", `${rec.input_tokens}/${rec.output_tokens}`], ["cost $", fmt("cost_usd", rec.cost_usd)],
      ["duration s", fmt("latency_s", t.duration_s)], ["model latency s", fmt("latency_s", rec.latency_s)],
      ["retries", rec.retries], ["attempt", rec.attempt], ["seed", rec.seed],
      ["truncated by", t.truncated_by], ["attachments", (rec.attachments || []).join(", ")]];
    const view = el("div", { id: "episode-view", "data-episode": i },
      el("h3", {}, rec.key || ""),
      el("table", { class: "meta" }, el("tbody", {}, ...meta.filter((m) => m[1] !== null && m[1] !== undefined && m[1] !== "")
        .map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))))));
    if (t.error || t.traceback) {
      view.append(el("h4", { class: "bad" }, "error"), el("pre", { class: "error" }, t.error || ""));
      if (t.traceback) view.append(folded(t.traceback, "traceback"));
    }
    if (t.agent_run) view.append(agentView(t));
    view.append(el("h4", {}, `Turns (rewards, returns-to-go with gamma ${DATA.gamma})`), stepsView(t));
    if (last && last.info && Object.keys(last.info).length) {
      view.append(el("h4", {}, "Grader output (the last step's info)"),
        folded(JSON.stringify(last.info, null, 2), "info"));
    }
    view.append(el("h4", {}, "Messages"));
    if (t.initial_observation && !(t.messages || []).length) view.append(folded(t.initial_observation, "observation"));
    for (const m of t.messages || []) view.append(messageView(m));
    for (const s of unreadObservations(t)) {
      view.append(el("div", { class: "msg env", "data-step": s.index },
        el("div", { class: "role" }, `env (turn ${s.index}${s.terminated ? ", terminated" : s.truncated ? ", truncated" : ""}; not sent to the model)`),
        folded(s.observation, "observation")));
    }
    $("episode").replaceChildren(view);
    view.scrollIntoView({ block: "start" });
  }
})();
