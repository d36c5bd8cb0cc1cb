// The operator console (CONTRACT.md, "Operator console"): every admin read
// and action, against the admin endpoints only. No framework, no build step:
// the learner's page is built the same way. The admin token lives in this
// tab's sessionStorage and goes out as a bearer token: never in a URL, a
// cookie, or a log line.
"use strict";

const KEY = "laurels-admin-token";
const $ = (id) => document.getElementById(id);
const state = { section: "boards", user: null, season: "current", board: "global",
                week: "current", kindBoards: [], teamKinds: new Map() };
const token = () => sessionStorage.getItem(KEY);
const seg = encodeURIComponent;  // every value put in a path
// `?board=` for a board of a kind; nothing for the whole board.
const onBoard = (board, sep = "?") => (!board || board === "global" ? ""
  : `${sep}board=${seg(board)}`);

// A call of the admin API: {ok, status, body}. A refusal's `detail` is
// shown, unless `quiet` (an answer the caller expects, as "not ranked").
async function api(method, path, body, quiet = false) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp;
  try {
    resp = await fetch(path, { method, headers, cache: "no-store",
                               body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    problem("The server cannot be reached.");
    return { ok: false, status: 0, body: null };
  }
  const text = await resp.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch (e) { parsed = text; }
  if (!resp.ok && !quiet) {
    problem(parsed && parsed.detail ? parsed.detail : `refused (${resp.status})`);
  }
  if (resp.status === 401) signOut("The token was refused: sign in again.");
  return { ok: resp.ok, status: resp.status, body: parsed };
}

function problem(text) { $("problem").textContent = text || ""; }

function cell(tr, text, cls) {
  const td = tr.insertCell();
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (cls) td.className = cls;
  return td;
}

function button(tr, label, onClick) {
  const td = tr.insertCell();
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.addEventListener("click", onClick);
  td.appendChild(b);
  return b;
}

function rows(id, items, fill) {
  const tbody = $(id).querySelector("tbody");
  tbody.replaceChildren();
  for (const item of items) fill(tbody.insertRow(), item);
}

const local = (iso) => iso ? new Date(Date.parse(iso)).toLocaleString() : "";

// A reason for an action whose endpoint takes one (null: cancelled).
function reason(what, required) {
  const text = window.prompt(`Reason for ${what}${required ? "" : " (optional)"}:`, "");
  if (text === null) return null;
  if (required && !text.trim()) {
    problem(`${what}: a reason is required (1 to 500 characters).`);
    return null;
  }
  return text.trim();
}

// -- signing in ---------------------------------------------------------------------------------

async function signIn(event) {
  event.preventDefault();
  const input = $("token");
  const candidate = input.value.trim();
  input.value = "";  // not kept in the form
  const resp = await fetch("/v1/admin/audit?limit=1", {
    headers: { Authorization: `Bearer ${candidate}` }, cache: "no-store" });
  if (!resp.ok) {
    let detail = "";
    try { detail = (await resp.json()).detail || ""; } catch (e) { /* no body */ }
    $("signin-error").textContent = `Refused: ${detail || resp.status}`;
    return;
  }
  sessionStorage.setItem(KEY, candidate);
  start();
}

function signOut(why) {
  sessionStorage.removeItem(KEY);
  $("console").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = why || "";
  $("status").textContent = "signed out";
}

function start() {
  $("signin").hidden = true;
  $("console").hidden = false;
  $("signin-error").textContent = "";
  $("status").textContent = "signed in";
  show(state.section);
}

function show(section) {
  state.section = section;
  problem("");
  for (const b of $("sections").querySelectorAll("button[data-section]")) {
    b.setAttribute("aria-pressed", String(b.dataset.section === section));
    $(b.dataset.section).hidden = b.dataset.section !== section;
  }
  ({ boards: () => { loadKindChoices(); loadBoards(); }, learner: () => state.user && loadLearner(), leagues: loadLeagues,
     kinds: loadKinds, "team-kinds": loadTeamKinds, challenges: loadChallenges, webhooks: loadDeliveries, audit: loadAudit,
     health: loadHealth })[section]();
}

// -- boards: seasons, rebuild (with its progress), verify ------------------------------------------

const ALIASES = { week: "current", day: "current-day", month: "current-month", all: "all",
                  "7d": "last-7d", "30d": "last-30d" };

async function loadBoards() {
  const meta = document.querySelector('meta[name="laurels-periods"]');
  const periods = (meta ? meta.content : "week").split(",");
  const seasons = [];
  for (const p of periods) {
    const r = await api("GET", `/v1/leaderboards/${ALIASES[p]}?limit=1`);
    if (r.ok) seasons.push(r.body);
  }
  seasons.push(...state.kindBoards);
  rows("seasons", seasons, (tr, s) => {
    cell(tr, s.board);
    cell(tr, s.season);
    cell(tr, s.status);
    cell(tr, s.total);
    const td = tr.insertCell();
    for (const [label, act] of [["Rebuild", rebuild], ["Verify", verify]]) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.addEventListener("click", () => act(s.season, s.board));
      td.appendChild(b);
    }
  });
}

// The boards of a kind (a course, a track...) this week, by name, searched:
// listed under the whole board's, each with rebuild and verify.
async function loadKindChoices() {
  const r = await api("GET", "/v1/admin/board-kinds");
  const select = $("boards-kind");
  select.replaceChildren();
  for (const k of (r.ok && r.body.kinds) || []) {
    const option = document.createElement("option");
    option.value = k.kind;
    option.textContent = `${k.title} (${k.kind})`;
    select.appendChild(option);
  }
  $("kind-boards").hidden = select.options.length === 0;
}

async function findKindBoards(event) {
  event.preventDefault();
  const kind = $("boards-kind").value, search = $("boards-search").value.trim();
  if (!kind) return;
  const r = await api("GET", `/v1/admin/board-kinds/${seg(kind)}/boards?season=current` +
                      (search ? `&search=${seg(search)}` : ""));
  if (!r.ok) return;
  const found = await Promise.all(r.body.boards.map((b) => api(
    "GET", `/v1/leaderboards/current?limit=1&board=${seg(b.board)}`)));
  state.kindBoards = found.filter((f) => f.ok).map((f) => f.body);
  $("status").textContent = `${r.body.boards.length} board${r.body.boards.length === 1 ? "" : "s"}` +
    ` of ${kind} in ${r.body.season}` + (r.body.next ? " (the first 100: search to narrow)" : "");
  loadBoards();
}

async function rebuild(season, board) {
  const out = $("rebuild-progress");
  const r = await api("POST", `/v1/admin/leaderboards/${seg(season)}/rebuild${onBoard(board)}`);
  if (!r.ok) return;
  const id = r.body.rebuild_id;
  out.textContent = `Rebuild of ${season}: running…`;
  for (;;) {
    const s = await api("GET", `/v1/admin/rebuilds/${seg(id)}`);
    if (!s.ok) return;
    out.textContent = `Rebuild of ${season}: ${s.body.status}, ${s.body.events} events` +
      (s.body.error ? ` (${s.body.error})` : "");
    out.dataset.status = s.body.status;
    if (s.body.status !== "running") break;
    await new Promise((done) => setTimeout(done, 300));
  }
  loadBoards();
}

async function verify(season, board) {
  const r = await api("GET", `/v1/admin/leaderboards/${seg(season)}/verify${onBoard(board)}`);
  if (!r.ok) return;
  const v = r.body;
  $("verify-result").textContent = v.consistent
    ? `${season}: consistent (${v.players_checked} learners checked).`
    : `${season}: NOT consistent: ${v.mismatches.map((m) => `learner ${m.user_id}: Redis ` +
        `${m.redis}, PostgreSQL ${m.postgres}`).join("; ")}`;
}

// -- a learner ----------------------------------------------------------------------------------

async function findLearner(event) {
  event.preventDefault();
  state.user = $("user-id").value.trim();
  state.season = $("user-season").value.trim() || "current";
  state.board = $("user-board").value.trim() || "global";
  problem("");
  loadLearner();
}

// The board a learner is looked at on: the whole board, or a board of a kind
// (its own season, in its zone: a Tokyo course's week is not UTC's).
const boardName = (board) => (board === "global" ? "the board" : `the board ${board}`);

async function loadLearner() {
  const uid = state.user, season = state.season, board = state.board;
  const [me, done, mine] = await Promise.all([
    api("GET", `/v1/leaderboards/${seg(season)}/users/${seg(uid)}?radius=0` +
        onBoard(board, "&"), undefined, true),
    api("GET", `/v1/leaderboards/${seg(season)}/users/${seg(uid)}/completions?limit=100` +
        onBoard(board, "&")),
    api("GET", `/v1/users/${seg(uid)}/boards?season=current`, undefined, true)]);
  $("learner-view").hidden = false;
  if (me.ok) {
    const u = me.body.user;
    $("learner-summary").textContent = `${u.display_name} (learner ${uid}, ${u.visibility}): ` +
      `rank ${u.rank} with ${u.score} in ${me.body.season} on ${boardName(board)}.`;
    problem("");
  } else {
    $("learner-summary").textContent = `Learner ${uid}: not on ${boardName(board)} in ${season}` +
      (me.body && me.body.detail ? ` (${me.body.detail}).` : ".");
  }
  // Every board the learner counts on this week: one click looks there.
  const list = $("learner-boards");
  list.replaceChildren();
  for (const b of (mine.ok && mine.body.boards) || []) {
    const pick = document.createElement("button");
    pick.type = "button";
    pick.dataset.board = b.board;
    pick.textContent = (b.board === "global" ? "Whole board" : `${b.title} · ` +
      b.board.split(":")[1]) + ` #${b.rank}`;
    pick.setAttribute("aria-pressed", String(b.board === board));
    pick.addEventListener("click", () => {
      state.board = b.board;
      $("user-board").value = b.board;
      loadLearner();
    });
    list.appendChild(pick);
  }
  rows("completions", done.ok ? done.body.completions : [], (tr, c) => {
    cell(tr, c.completion_id);
    cell(tr, local(c.completed_at));
    cell(tr, c.points);
    cell(tr, c.status, c.status === "voided" ? "voided" : "");
    button(tr, c.status === "voided" ? "Restore" : "Void…", () => correct(c));
  });
}

async function correct(c) {
  const voiding = c.status !== "voided";
  const why = reason(`${voiding ? "voiding" : "restoring"} ${c.completion_id}`, voiding);
  if (why === null) return;
  const body = why ? { reason: why } : {};
  const r = await api("POST", `/v1/admin/completions/${encodeURIComponent(c.completion_id)}/` +
                      (voiding ? "void" : "restore"), body);
  if (r.ok) loadLearner();
}

async function correctAll(voiding) {
  const why = reason(`${voiding ? "voiding" : "restoring"} all of learner ${state.user}'s ` +
                     `${state.season} on ${boardName(state.board)}`, voiding);
  if (why === null) return;
  const body = { season: state.season };
  if (state.board !== "global") body.board = state.board;
  if (why) body.reason = why;
  const r = await api("POST", `/v1/admin/users/${seg(state.user)}/` +
                      (voiding ? "void" : "restore"), body);
  if (r.ok) {
    $("status").textContent = `${r.body.voided ?? r.body.restored} completions ` +
      `${voiding ? "voided" : "restored"}`;
    loadLearner();
  }
}

async function suspend(on) {
  const why = reason(`${on ? "suspending" : "unsuspending"} learner ${state.user}`, on);
  if (why === null) return;
  const r = await api("POST", `/v1/admin/users/${seg(state.user)}/` +
                      (on ? "suspend" : "unsuspend"), why ? { reason: why } : {});
  if (r.ok) {
    $("status").textContent = `learner ${state.user} ${on ? "suspended" : "unsuspended"}`;
    loadLearner();
  }
}

async function erase() {
  const typed = window.prompt(`Erasing learner ${state.user} cannot be undone: their ` +
    `completions, name and notifications go from every board. Type "erase ${state.user}" ` +
    "to confirm.", "");
  if (typed === null) return;
  if (typed.trim() !== `erase ${state.user}`) {
    problem("Not erased: the confirmation did not match.");
    return;
  }
  const r = await api("DELETE", `/v1/users/${seg(state.user)}`);
  if (r.ok) {
    $("status").textContent = `learner ${state.user} erased`;
    loadLearner();
  }
}

// -- leagues ------------------------------------------------------------------------------------

async function loadLeagues(event) {
  if (event) event.preventDefault();
  state.week = $("week").value.trim() || "current";
  const summary = await api("GET", `/v1/admin/leagues/${seg(state.week)}`);
  if (!summary.ok) return;
  $("league-decided").textContent = `${summary.body.season}: ` +
    (summary.body.decided ? "decided" : "not decided yet");
  rows("tiers", summary.body.tiers, (tr, t) => {
    for (const v of [t.tier, t.cohorts, t.members, t.promoted, t.demoted]) cell(tr, v);
  });
  const cohorts = [];
  let after = null;
  do {
    const q = after ? `&after=${encodeURIComponent(after)}` : "";
    const page = await api("GET", `/v1/admin/leagues/${seg(state.week)}/cohorts?limit=1000${q}`);
    if (!page.ok) return;
    cohorts.push(...page.body.cohorts);
    after = page.body.next;
  } while (after);
  rows("cohorts", cohorts, (tr, c) => {
    cell(tr, c.cohort_id);
    cell(tr, c.tier);
    cell(tr, c.members);
    button(tr, "Show", () => showCohort(summary.body.season, c.cohort_id));
  });
}

async function showCohort(season, cohortId) {
  const r = await api("GET", `/v1/leagues/${seg(season)}/cohorts/${seg(cohortId)}`);
  if (!r.ok) return;
  $("cohort-title").textContent = `${cohortId} (${r.body.tier}, ` +
    `${r.body.decided ? "decided" : "not decided yet"})`;
  $("cohort-board").hidden = false;
  rows("cohort-board", r.body.entries, (tr, e) => {
    for (const v of [e.rank, e.display_name, e.zone || "", e.outcome || "", e.score]) cell(tr, v);
  });
}

// -- board kinds -------------------------------------------------------------------------------

async function loadKinds() {
  const r = await api("GET", "/v1/admin/board-kinds");
  if (!r.ok) return;
  rows("kind-list", r.body.kinds, (tr, k) => {
    for (const v of [k.kind, k.title, k.metric, k.periods.join(", "), k.time_zone,
                     k.notify ? "yes" : "no"]) cell(tr, v);
    button(tr, "Delete…", async () => {
      const typed = window.prompt(`Deleting the kind ${k.kind} removes every one of its ` +
        `boards (tags stay on completions). Type "delete ${k.kind}" to confirm.`, "");
      if (typed === null) return;
      if (typed.trim() !== `delete ${k.kind}`) {
        problem("Not deleted: the confirmation did not match.");
        return;
      }
      const d = await api("DELETE", `/v1/admin/board-kinds/${encodeURIComponent(k.kind)}`);
      if (d.ok) loadKinds();
    });
  });
}

async function defineKind(event) {
  event.preventDefault();
  const body = { metric: $("kind-metric").value, notify: $("kind-notify").checked,
                 periods: $("kind-periods").value.split(",").map((p) => p.trim()).filter(Boolean) };
  if ($("kind-title").value.trim()) body.title = $("kind-title").value.trim();
  if ($("kind-zone").value.trim()) body.time_zone = $("kind-zone").value.trim();
  const r = await api("PUT", `/v1/admin/board-kinds/${encodeURIComponent($("kind-name").value.trim())}`,
                      body);
  if (r.ok) {
    $("status").textContent = `kind ${r.body.kind} ${r.status === 201 ? "defined" : "retitled"}`;
    loadKinds();
  }
}

// -- team kinds --------------------------------------------------------------------------------

// Every team kind, with how its teams score and how many are ranked this
// week (its board's total).
async function loadTeamKinds() {
  const r = await api("GET", "/v1/admin/team-kinds");
  if (!r.ok) return;
  const kinds = r.body.team_kinds;
  const boards = await Promise.all(kinds.map((k) => api(
    "GET", `/v1/teams/${seg(k.team)}/leaderboards/current?limit=1`, undefined, true)));
  state.teamKinds = new Map(kinds.map((k) => [k.team, k]));
  rows("team-kind-list", kinds, (tr, k) => {
    tr.dataset.id = k.team;
    const board = boards[kinds.indexOf(k)];
    for (const v of [k.team, k.title, teamAggregate(k), board.ok ? board.body.total : "",
                     local(k.created_at)]) cell(tr, v);
    const td = tr.insertCell();
    for (const [label, act] of [["Edit", () => editTeamKind(k)],
                                ["Delete…", () => deleteTeamKind(k)]]) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.addEventListener("click", act);
      td.appendChild(b);
    }
  });
}

const teamAggregate = (k) => (k.aggregate === "top" ? `top ${k.top}` : k.aggregate);

// The number of best members is asked for with `top` only.
function topInput() {
  const top = $("team-kind-top");
  top.disabled = $("team-kind-aggregate").value !== "top";
  top.required = !top.disabled;
  if (top.disabled) top.value = "";
}

function editTeamKind(k) {
  $("team-kind-name").value = k.team;
  $("team-kind-title").value = k.title;
  $("team-kind-aggregate").value = k.aggregate;
  topInput();
  if (k.top !== null) $("team-kind-top").value = String(k.top);
  $("team-kind-title").focus();
}

async function defineTeamKind(event) {
  event.preventDefault();
  problem("");
  const team = $("team-kind-name").value.trim();
  const body = { aggregate: $("team-kind-aggregate").value };
  if ($("team-kind-title").value.trim()) body.title = $("team-kind-title").value.trim();
  if (body.aggregate === "top") body.top = Number($("team-kind-top").value);
  const before = state.teamKinds.get(team);
  const r = await api("PUT", `/v1/admin/team-kinds/${seg(team)}`, body);
  if (r.ok) {
    $("status").textContent = `team kind ${r.body.team} ` + (r.status === 201 ? "defined"
      : before && before.title === r.body.title ? "unchanged" : "retitled");
    loadTeamKinds();
  }
}

async function deleteTeamKind(k) {
  const typed = window.prompt(`Deleting the team kind ${k.team} removes its team boards; its ` +
    `groups stay, in no team kind. Type "delete ${k.team}" to confirm.`, "");
  if (typed === null) return;
  if (typed.trim() !== `delete ${k.team}`) {
    problem("Not deleted: the confirmation did not match.");
    return;
  }
  const r = await api("DELETE", `/v1/admin/team-kinds/${seg(k.team)}`);
  if (r.ok) {
    $("status").textContent = `team kind ${k.team} deleted`;
    loadTeamKinds();
  }
}

// -- challenges -------------------------------------------------------------------------------------

// Every challenge (of one status), page after page.
async function loadChallenges(event) {
  if (event) event.preventDefault();
  const status = $("challenge-status").value;
  const listed = [];
  let after = null;
  do {
    const q = (status ? `&status=${seg(status)}` : "") + (after ? `&after=${seg(after)}` : "");
    const page = await api("GET", `/v1/challenges?limit=1000${q}`);
    if (!page.ok) return;
    listed.push(...page.body.challenges);
    after = page.body.next;
  } while (after);
  $("challenge-zone").textContent = `your time (${Intl.DateTimeFormat().resolvedOptions().timeZone})`;
  rows("challenge-list", listed, (tr, c) => {
    tr.dataset.id = c.challenge_id;
    const named = cell(tr, c.title);
    const id = document.createElement("small");
    id.textContent = c.challenge_id;
    named.append(document.createElement("br"), id);
    const when = cell(tr, `${SHORT.format(Date.parse(c.starts_at))} to`);
    when.append(document.createElement("br"), SHORT.format(Date.parse(c.ends_at)));
    cell(tr, [c.board, c.metric, c.join === "required"
      ? `required${c.max_size ? ` (max ${c.max_size})` : ""}` : "open"].join(" · "));
    cell(tr, c.participants);
    cell(tr, c.rewards.map((r) => rewardsText([r])).join("\n"), "rewards");
    cell(tr, c.decided ? "ended, decided" : c.status, `status-${c.status}`);
    const td = tr.insertCell();
    for (const [label, act] of [["Edit", () => editChallenge(c)], ["Delete…", () => deleteChallenge(c)]]) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.addEventListener("click", act);
      td.appendChild(b);
    }
  });
}

const SHORT = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

// Rewards as an operator types them: "1: gold; 2-10: silver".
const rewardsText = (rewards) => rewards.map((r) =>
  `${r.from === r.to ? r.from : `${r.from}-${r.to}`}: ${r.reward}`).join("; ");

function parseRewards(text) {
  const out = [];
  for (const part of text.split(/[;\n]/).map((p) => p.trim()).filter(Boolean)) {
    const m = /^([0-9]+)(?:\s*-\s*([0-9]+))?\s*:\s*(.+)$/.exec(part);
    if (!m) throw new Error(`"${part}" is not "from-to: reward" (e.g. "2-10: silver")`);
    out.push({ from: Number(m[1]), to: Number(m[2] || m[1]), reward: m[3].trim() });
  }
  return out;
}

// An instant as a datetime-local input holds it (the browser's time), and back.
function inputTime(iso) {
  const d = new Date(Date.parse(iso));
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

const instant = (value) => new Date(value).toISOString().replace(/\.000Z$/, "Z");

// The form filled with a challenge: once it started, only its title, its
// rewards and a later end may change (the server answers 409 otherwise).
function editChallenge(c) {
  $("challenge-id").value = c.challenge_id;
  $("challenge-title").value = c.title;
  $("challenge-board").value = c.board;
  $("challenge-metric").value = c.metric;
  $("challenge-starts").value = inputTime(c.starts_at);
  $("challenge-ends").value = inputTime(c.ends_at);
  $("challenge-join").value = c.join;
  $("challenge-max").value = c.max_size === null ? "" : String(c.max_size);
  $("challenge-rewards").value = rewardsText(c.rewards);
  $("challenge-notify").checked = c.notify;
  $("challenge-grace").value = String(c.grace_seconds);
  $("challenge-title").focus();
}

async function defineChallenge(event) {
  event.preventDefault();
  problem("");
  let body;
  try {
    body = { title: $("challenge-title").value.trim(), board: $("challenge-board").value.trim(),
             metric: $("challenge-metric").value, join: $("challenge-join").value,
             starts_at: instant($("challenge-starts").value),
             ends_at: instant($("challenge-ends").value),
             notify: $("challenge-notify").checked,
             grace_seconds: Number($("challenge-grace").value || "0"),
             rewards: parseRewards($("challenge-rewards").value) };
  } catch (e) {
    problem(`Not defined: ${e.message}`);
    return;
  }
  if ($("challenge-max").value.trim()) body.max_size = Number($("challenge-max").value);
  const id = $("challenge-id").value.trim();
  const r = await api("PUT", `/v1/admin/challenges/${seg(id)}`, body);
  if (r.ok) {
    $("status").textContent = `challenge ${r.body.challenge_id} ${r.status === 201 ? "defined" : "changed"}`;
    loadChallenges();
  }
}

async function deleteChallenge(c) {
  const typed = window.prompt(`Deleting the challenge ${c.challenge_id} removes its board, its ` +
    `joins and its results (${c.participants} taking part). Type "delete ${c.challenge_id}" to ` +
    "confirm.", "");
  if (typed === null) return;
  if (typed.trim() !== `delete ${c.challenge_id}`) {
    problem("Not deleted: the confirmation did not match.");
    return;
  }
  const r = await api("DELETE", `/v1/admin/challenges/${seg(c.challenge_id)}`);
  if (r.ok) {
    $("status").textContent = `challenge ${c.challenge_id} deleted`;
    loadChallenges();
  }
}

// -- webhook deliveries, audit, health ------------------------------------------------------------

async function loadDeliveries() {
  const [failed, all] = await Promise.all([
    api("GET", "/v1/admin/webhooks/deliveries?status=failed&limit=100"),
    api("GET", "/v1/admin/webhooks/deliveries?limit=100")]);
  if (!failed.ok || !all.ok) return;
  const seen = new Set(failed.body.deliveries.map((d) => d.id));
  // Failed first, then those failing (retrying), then the rest: a pending
  // delivery is either waiting for its first attempt (a notification's waits
  // for the coalescing window) or retrying after failed ones.
  const failing = (d) => d.status === "pending" && d.attempts > 0;
  const rest = all.body.deliveries.filter((d) => !seen.has(d.id));
  const listed = [...failed.body.deliveries, ...rest.filter(failing),
                  ...rest.filter((d) => !failing(d))];
  rows("deliveries", listed, (tr, d) => {
    tr.dataset.id = d.id;
    cell(tr, d.type);
    const state = d.status !== "pending" ? d.status : failing(d) ? "retrying" : "waiting";
    cell(tr, state, d.status === "failed" || failing(d) ? "failed" : "");
    cell(tr, d.attempts);
    cell(tr, d.last_error);
    cell(tr, local(d.next_attempt_at));
    if (d.status === "delivered") { cell(tr, ""); return; }
    button(tr, "Retry", async () => {
      const r = await api("POST", `/v1/admin/webhooks/deliveries/${seg(d.id)}/retry`);
      if (r.ok) {
        $("status").textContent = `delivery ${d.id} sent again`;
        loadDeliveries();
      }
    });
  });
}

async function loadAudit() {
  const r = await api("GET", "/v1/admin/audit?limit=100");
  if (!r.ok) return;
  rows("audit-log", r.body.entries, (tr, e) => {
    for (const v of [local(e.at), e.action, e.target, e.reason]) cell(tr, v);
  });
}

// The figures an operator watches, from /metrics (Prometheus text).
async function loadHealth() {
  const resp = await fetch("/metrics", { headers: { Authorization: `Bearer ${token()}` },
                                         cache: "no-store" });
  const out = $("health-figures");
  out.replaceChildren();
  if (!resp.ok) { problem(`/metrics refused (${resp.status})`); return; }
  const text = await resp.text();
  const sum = (name, where = "") => text.split("\n")
    .filter((l) => l.startsWith(name) && l.includes(where) && !l.startsWith("#"))
    .reduce((acc, l) => acc + Number(l.split(" ").pop()), 0);
  const lagCount = sum("laurels_apply_lag_seconds_count");
  const figures = [
    ["Outbox depth", sum("laurels_outbox_depth")],
    ["Oldest outbox row", `${sum("laurels_outbox_oldest_seconds").toFixed(1)} s`],
    ["Apply lag (mean)", lagCount ? `${(1000 * sum("laurels_apply_lag_seconds_sum") / lagCount)
      .toFixed(1)} ms over ${lagCount} applies` : "no applies yet"],
    ["Webhook deliveries pending", sum("laurels_webhook_deliveries", 'status="pending"')],
    ["Webhook deliveries failed", sum("laurels_webhook_deliveries", 'status="failed"')],
  ];
  for (const [name, value] of figures) {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = String(value);
    out.append(dt, dd);
  }
}

// -- wiring -----------------------------------------------------------------------------------------

$("signin").addEventListener("submit", signIn);
$("signout").addEventListener("click", () => signOut());
for (const b of $("sections").querySelectorAll("button[data-section]")) {
  b.addEventListener("click", () => show(b.dataset.section));
}
$("find").addEventListener("submit", findLearner);
$("kind-boards").addEventListener("submit", findKindBoards);
$("void-week").addEventListener("click", () => correctAll(true));
$("restore-week").addEventListener("click", () => correctAll(false));
$("suspend").addEventListener("click", () => suspend(true));
$("unsuspend").addEventListener("click", () => suspend(false));
$("erase").addEventListener("click", erase);
$("week-form").addEventListener("submit", loadLeagues);
$("define-kind").addEventListener("submit", defineKind);
$("define-team-kind").addEventListener("submit", defineTeamKind);
$("define-team-kind").addEventListener("reset", () => setTimeout(topInput));
$("team-kind-aggregate").addEventListener("change", topInput);
$("challenge-filter").addEventListener("submit", loadChallenges);
$("define-challenge").addEventListener("submit", defineChallenge);
$("any-board").addEventListener("submit", (event) => {
  event.preventDefault();
  rebuild($("any-season").value.trim(), $("any-board-name").value.trim());
});
$("any-verify").addEventListener("click", () => verify($("any-season").value.trim(),
                                                      $("any-board-name").value.trim()));
if (token()) start();
