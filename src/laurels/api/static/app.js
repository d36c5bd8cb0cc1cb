// The live board: fetch the canonical API, listen to the hint stream, refetch
// on every hint and on every (re)connect. A hint's content is never trusted.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { season: null, token: null, me: null, source: null, inbox: null, timer: null,
                board: { kind: "all" }, friends: [], period: "week" };
// Each period's board of "now" (docs/contract.md, Domain), and its label.
const PERIODS = { week: ["current", "This week"], day: ["current-day", "Today"],
                  month: ["current-month", "This month"], all: ["all", "All time"] };
const SEASON_NAME = /^([0-9]{4}-W[0-9]{2}|[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{2}|all)$/;

function periodOf(season) {
  if (season === "all") return "all";
  if (season.includes("-W")) return "week";
  return season.length === 10 ? "day" : "month";
}

// ISO-8601 week of a date, in UTC (the same rule as the server's seasons).
function isoWeek(date) {
  const d = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
  const day = d.getUTCDay() || 7;
  d.setUTCDate(d.getUTCDate() + 4 - day);
  const yearStart = new Date(Date.UTC(d.getUTCFullYear(), 0, 1));
  const week = Math.ceil(((d - yearStart) / 86400000 + 1) / 7);
  return `${d.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
}

// The season before (dir -1) or after (dir 1) the one starting at `startsAt`.
function shiftSeason(startsAt, dir) {
  const d = new Date(Date.parse(startsAt));
  if (state.period === "day") return new Date(d.getTime() + dir * 86400000).toISOString().slice(0, 10);
  if (state.period === "month") {
    return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + dir, 1)).toISOString().slice(0, 7);
  }
  return isoWeek(new Date(d.getTime() + (dir < 0 ? -3 : 10) * 86400000));
}

function learnerFromToken(token) {
  try {
    const payload = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    return /^[0-9]+$/.test(payload.sub) ? payload.sub : null;
  } catch (e) {
    return null;
  }
}

async function getJSON(url, withToken) {
  const headers = withToken && state.token ? { Authorization: `Bearer ${state.token}` } : {};
  const resp = await fetch(url, { headers });
  if (resp.status === 503) {
    const retry = Number(resp.headers.get("Retry-After") || "2");
    setStatus(`board is being rebuilt; retrying in ${retry}s`);
    setTimeout(refresh, retry * 1000);
    return null;
  }
  if (!resp.ok) return { problem: await resp.json().catch(() => ({})), status: resp.status };
  return resp.json();
}

function setStatus(text) { $("status").textContent = text; }

function cell(tr, text) {
  const td = document.createElement("td");
  td.textContent = text;
  tr.appendChild(td);
}

function renderBoard(body) {
  $("season").textContent = body.season;
  const b = state.board;
  $("board-title").textContent = b.kind === "group" ? `${b.name}: top 100`
    : b.kind === "friends" ? "Friends" : "Top 100";
  $("total").textContent = body.total === undefined ? `(${body.entries.length} learners)`
    : `(${body.total} learners, ${body.status}, ties: ${body.tie_policy})`;
  $("range").textContent = body.starts_at ? `${body.starts_at} to ${body.ends_at}` : "all time";
  $("prev").hidden = $("next").hidden = body.period === "all";
  $("empty").hidden = body.entries.length > 0;
  const tbody = $("board").querySelector("tbody");
  const before = new Map([...tbody.rows].map((r) => [r.dataset.key, r.dataset.rank]));
  tbody.replaceChildren();
  for (const e of body.entries) {
    const tr = document.createElement("tr");
    tr.dataset.key = e.user_id === null ? `anon-${e.rank}-${e.score}` : String(e.user_id);
    tr.dataset.rank = String(e.rank);
    tr.dataset.userId = e.user_id === null ? "" : String(e.user_id);
    cell(tr, String(e.rank));
    cell(tr, e.display_name);
    cell(tr, String(e.score));
    if (before.has(tr.dataset.key) && before.get(tr.dataset.key) !== tr.dataset.rank) {
      tr.classList.add("moved");
    }
    const mine = b.kind === "all"
      ? state.me && state.me.rank === e.rank && state.me.score === e.score &&
        (e.user_id === state.me.user_id || e.user_id === null)
      : e.self === true || String(e.user_id) === state.userId;
    if (mine) tr.classList.add("me");
    tbody.appendChild(tr);
  }
}

function renderMe(body) {
  const section = $("me");
  if (!body || body.problem) {
    section.hidden = !state.token;
    $("me-summary").textContent = body && body.status === 404
      ? "No completions this week yet." : (body ? "Your token was not accepted." : "");
    $("neighbors").replaceChildren();
    state.me = null;
    return;
  }
  state.me = body.user;
  section.hidden = false;
  const u = body.user;
  $("me-summary").textContent =
    `${u.display_name}: rank ${u.rank} with ${u.score} points (${u.visibility})`;
  const list = $("neighbors");
  list.replaceChildren();
  for (const n of body.neighbors) {
    const li = document.createElement("li");
    for (const text of [String(n.rank), n.display_name, String(n.score)]) {
      const span = document.createElement("span");
      span.textContent = text;
      li.appendChild(span);
    }
    if (n.self) li.classList.add("me");
    list.appendChild(li);
  }
}

function describe(n) {
  if (n.kind === "top10") return `You entered the top 10 of ${n.season} (rank ${n.data.rank}).`;
  if (n.kind === "season_final") {
    return `${n.season} is over: final rank ${n.data.rank ?? "(hidden)"} with ${n.data.score} points.`;
  }
  return `${n.data.by_display_name || "Someone"} passed you in ${n.season}.`;
}

function addNotification(n, atTop) {
  const li = document.createElement("li");
  li.textContent = describe(n);
  li.dataset.id = String(n.id);
  if (!n.read) li.classList.add("unread");
  const list = $("notifications");
  if (atTop) list.prepend(li); else list.appendChild(li);
  $("inbox").hidden = false;
}

// The board the selected tab shows: the whole board, a group's, or friends'.
async function fetchBoard() {
  const b = state.board;
  if (b.kind === "group") {
    return getJSON(`/v1/groups/${encodeURIComponent(b.id)}/leaderboards/${state.season}?limit=100`, true);
  }
  if (b.kind === "friends") {
    const resp = await fetch(`/v1/leaderboards/${state.season}/ranks`, {
      method: "POST",
      headers: { Authorization: `Bearer ${state.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ user_ids: state.friends }),
    });
    return resp.ok ? resp.json() : { problem: {}, status: resp.status };
  }
  return getJSON(`/v1/leaderboards/${state.season}?limit=100`, false);
}

async function refresh() {
  if (!state.season) return;
  const body = await fetchBoard();
  if (!body || body.problem) return;
  state.season = body.season;
  if (body.starts_at) state.startsAt = body.starts_at;
  if (state.userId) {
    renderMe(await getJSON(`/v1/leaderboards/${state.season}/users/${state.userId}?radius=5`, true));
  }
  renderBoard(body);
  setStatus(`live · updated ${new Date().toLocaleTimeString()}`);
  document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
}

// Bursts of hints become one refetch.
function scheduleRefresh() {
  if (state.timer) return;
  state.timer = setTimeout(() => { state.timer = null; refresh(); }, 100);
}

function listen() {
  if (state.source) state.source.close();
  const source = new EventSource(`/v1/leaderboards/${state.season}/events`);
  source.addEventListener("ready", () => { setStatus("live"); scheduleRefresh(); });
  source.addEventListener("changed", scheduleRefresh);
  source.addEventListener("rebuilt", scheduleRefresh);
  source.onerror = () => setStatus("reconnecting…");
  state.source = source;
}

async function listenInbox() {
  const body = await getJSON(`/v1/users/${state.userId}/notifications`, true);
  if (body && body.notifications) body.notifications.forEach((n) => addNotification(n, false));
  const url = `/v1/users/${state.userId}/notifications/events?access_token=${encodeURIComponent(state.token)}`;
  state.inbox = new EventSource(url);
  state.inbox.addEventListener("notification", (ev) => {
    addNotification(JSON.parse(ev.data), true);
    scheduleRefresh();
  });
}

function addTab(label, board) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  button.setAttribute("aria-pressed", "false");
  button.addEventListener("click", () => select(button, board));
  $("tabs").appendChild(button);
  $("tabs").hidden = false;
  return button;
}

function select(button, board) {
  for (const b of $("tabs").querySelectorAll("button")) b.setAttribute("aria-pressed", "false");
  button.setAttribute("aria-pressed", "true");
  state.board = board;
  refresh();
}

// A learner's groups become tabs next to the whole board; `#friends=1,2,3`
// adds a friends board. Every tab refetches on the season's hints.
async function tabs() {
  const everyone = $("tabs").querySelector("button");
  everyone.addEventListener("click", () => select(everyone, { kind: "all" }));
  const body = await getJSON(`/v1/users/${state.userId}/groups`, true);
  for (const g of (body && body.groups) || []) addTab(g.name, { kind: "group", id: g.group_id, name: g.name });
  if (state.friends.length) addTab("Friends", { kind: "friends" });
}

// The periods this server counts (named by the page) join the switch.
function periods() {
  const select = $("period");
  const meta = document.querySelector('meta[name="laurels-periods"]');
  const configured = (meta ? meta.content : "week").split(",");
  for (const p of ["day", "month", "all"]) {
    if (!configured.includes(p)) continue;
    const option = document.createElement("option");
    option.value = p;
    option.textContent = PERIODS[p][1];
    select.appendChild(option);
    select.hidden = false;
  }
  select.value = state.period;
  select.addEventListener("change", () => go(PERIODS[select.value][0]));
}

function go(season) {
  state.season = season;
  state.period = season === "current" ? "week"
    : season === "current-day" ? "day" : season === "current-month" ? "month" : periodOf(season);
  const url = new URL(location.href);
  url.searchParams.set("season", season);
  history.replaceState(null, "", url);
  listen();
  refresh();
}

function start() {
  const hash = new URLSearchParams(location.hash.slice(1));
  state.token = hash.get("token");
  state.userId = state.token ? learnerFromToken(state.token) : null;
  const wanted = new URLSearchParams(location.search).get("season");
  $("prev").addEventListener("click", () => state.startsAt && go(shiftSeason(state.startsAt, -1)));
  $("next").addEventListener("click", () => state.startsAt && go(shiftSeason(state.startsAt, 1)));
  state.friends = (hash.get("friends") || "").split(",").filter((x) => /^[0-9]+$/.test(x)).map(Number)
    .slice(0, 1000);
  if (state.userId) {
    listenInbox();
    tabs();
  }
  go(wanted && SEASON_NAME.test(wanted) ? wanted : isoWeek(new Date()));
  periods();
}

start();
