// The live board: fetch the canonical API, listen to the hint stream, refetch
// on every hint and on every (re)connect. A hint's content is never trusted.
"use strict";

const $ = (id) => document.getElementById(id);
// `season` is the name the board answered with; `alias` the board of now the
// page was pointed at (`current`, ...), if any: each board resolves it in its
// own time zone, so it is asked for again whenever the shown board changes.
const state = { season: null, alias: null, token: null, me: null, source: null, inbox: null,
                timer: null, board: { kind: "all" }, friends: [], period: "week",
                listening: null, league: null, lastWeeks: new Map(), countdown: null };
// Each period's board of "now" (docs/contract.md, Domain), and its label.
const PERIODS = { week: ["current", "This week"], day: ["current-day", "Today"],
                  month: ["current-month", "This month"], all: ["all", "All time"] };
const ALIASES = { current: "week", "current-day": "day", "current-month": "month" };
const SEASON_NAME = /^([0-9]{4}-W[0-9]{2}|[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{2}|all)$/;

function periodOf(season) {
  if (season === "all") return "all";
  if (season.includes("-W")) return "week";
  return season.length === 10 ? "day" : "month";
}

// Season names are stepped by calendar arithmetic on the names alone: the
// seasons are those of the deployment's time zone (LAURELS_TIME_ZONE), which
// the page does not know, so it never derives a name from an instant; the
// board of now is asked for by its alias (`current`, ...).
// The ISO-8601 week of a calendar date (held as UTC midnight).
function isoWeek(date) {
  const d = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
  const day = d.getUTCDay() || 7;
  d.setUTCDate(d.getUTCDate() + 4 - day);
  const yearStart = new Date(Date.UTC(d.getUTCFullYear(), 0, 1));
  const week = Math.ceil(((d - yearStart) / 86400000 + 1) / 7);
  return `${d.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
}

// A season's bounds in the learner's own time zone (the browser's): the
// deployment's zone decides when a season starts and ends, the learner's how
// that instant reads; the instants themselves stay in data attributes.
function showRange(startsAt, endsAt) {
  const out = $("range");
  out.dataset.startsAt = startsAt || "";
  out.dataset.endsAt = endsAt || "";
  if (!endsAt) {
    out.textContent = "all time";
    return;
  }
  const fmt = new Intl.DateTimeFormat(undefined, { weekday: "short", day: "numeric",
                                                   month: "short", hour: "2-digit",
                                                   minute: "2-digit" });
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const ends = new Date(Date.parse(endsAt));
  const span = startsAt ? `${fmt.format(new Date(Date.parse(startsAt)))} to ${fmt.format(ends)}`
    : `until ${fmt.format(ends)}`;
  const when = ends > Date.now() ? `resets ${fmt.format(ends)}` : "ended";
  out.textContent = `${span} · ${when} · your time (${zone})`;
}

// The season before (dir -1) or after (dir 1) the season named `name`.
function shiftSeason(name, dir) {
  const [y, m, d] = name.split("-").map((x) => parseInt(x.replace("W", ""), 10));
  if (periodOf(name) === "day") return new Date(Date.UTC(y, m - 1, d + dir)).toISOString().slice(0, 10);
  if (periodOf(name) === "month") return new Date(Date.UTC(y, m - 1 + dir, 1)).toISOString().slice(0, 7);
  const jan4 = new Date(Date.UTC(y, 0, 4));  // in ISO week 1 of year y
  const monday = Date.UTC(y, 0, 4 - ((jan4.getUTCDay() || 7) - 1) + (m - 1) * 7);
  return isoWeek(new Date(monday + dir * 7 * 86400000));
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
    : b.kind === "board" ? `${b.title} · ${b.board.split(":")[1]}: top 100`
    : b.kind === "friends" ? "Friends" : "Top 100";
  $("total").textContent = body.total === undefined ? `(${body.entries.length} learners)`
    : `(${body.total} learners, ${body.status}, ties: ${body.tie_policy})`;
  showRange(body.starts_at, body.ends_at);
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
  if (n.kind === "league_zone") {
    const where = n.data.zone === "promotion" ? "▲ promotion" : "▼ demotion";
    return `You entered the ${where} zone of your ${title(n.data.tier)} league ` +
      `(rank ${n.data.rank}).`;
  }
  if (n.kind === "league_result") {
    return `${n.season}: ${outcomeText(n.data.outcome, n.data.new_tier)}` +
      (n.data.rank === null ? "." : ` (rank ${n.data.rank} in ${title(n.data.tier)}).`);
  }
  // A board of a course, a track or a skill is named by its kind's title and
  // value, as its tab is ("Skill · python"); the whole board by its week.
  const where = n.data.board_title ? `${n.data.board_title}, ${n.season}` : n.season;
  if (n.kind === "top10") return `You entered the top 10 of ${where} (rank ${n.data.rank}).`;
  if (n.kind === "season_final") {
    return `${where} is over: final rank ${n.data.rank ?? "(hidden)"} ` +
      `${scored(n.data.metric, n.data.score)}.`;
  }
  if (n.kind === "overtaken") {
    return `${n.data.by_display_name || "Someone"} passed you in ${where}.`;
  }
  return `Something happened in ${where}.`;  // a kind this page does not know yet
}

// A score in the words of its board's metric.
function scored(metric, score) {
  if (metric === "best") return `with a best of ${score}`;
  if (metric === "completions") return `with ${score} completion${score === 1 ? "" : "s"}`;
  return `with ${score} point${score === 1 ? "" : "s"}`;
}

// "3 hours ago", "yesterday": when a notification last changed.
const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
function ago(iso) {
  const s = (Date.parse(iso) - Date.now()) / 1000;
  for (const [unit, size] of [["day", 86400], ["hour", 3600], ["minute", 60]]) {
    if (Math.abs(s) >= size) return RELATIVE.format(Math.round(s / size), unit);
  }
  return RELATIVE.format(0, "second");
}

function addNotification(n, atTop) {
  const li = document.createElement("li");
  const when = n.updated_at || n.created_at;
  li.append(describe(n), " ", span(`${n.season} · ${ago(when)}`, "when"));
  li.title = local(when);
  li.dataset.id = String(n.id);
  if (!n.read) li.classList.add("unread");
  const list = $("notifications");
  // A notice refreshed with a newer state comes again: it moves to the top.
  for (const old of list.querySelectorAll(`li[data-id="${n.id}"]`)) old.remove();
  if (atTop) list.prepend(li); else list.appendChild(li);
  $("inbox").hidden = false;
  const more = $("all-notifications");
  more.hidden = list.children.length <= 3 || $("inbox").classList.contains("all");
  more.textContent = `All ${list.children.length} notifications`;
}

function showAllNotifications() {
  $("inbox").classList.add("all");
  $("all-notifications").hidden = true;
  $("all-notifications").setAttribute("aria-expanded", "true");
}

// The board the selected tab shows: the whole board, a group's, or friends'.
async function fetchBoard() {
  const b = state.board;
  if (b.kind === "group") {
    return getJSON(`/v1/groups/${encodeURIComponent(b.id)}/leaderboards/${state.season}?limit=100`, true);
  }
  if (b.kind === "board") {  // a board of a course, a track or a skill
    return getJSON(`/v1/leaderboards/${state.season}?limit=100&board=${encodeURIComponent(b.board)}`,
                   false);
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
  if (state.board.kind === "league") return refreshLeague();
  const board = state.board;
  const body = await fetchBoard();
  if (!body || body.problem || state.board !== board) return;
  state.season = body.season;
  if (state.userId) {
    const on = board.kind === "board" ? `&board=${encodeURIComponent(board.board)}` : "";
    const url = `/v1/leaderboards/${state.season}/users/${state.userId}?radius=5${on}`;
    const me = await getJSON(url, true);
    if (state.board !== board) return;
    renderMe(me);
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

// Hints come from the cohort's stream while the League view shows a cohort,
// else from the season's.
function wantedStream() {
  const l = state.league;
  if (state.board.kind === "board") return `board ${state.board.board}`;
  return state.board.kind === "league" && l && l.status === "placed" && l.season === state.season
    ? `cohort ${l.season} ${l.cohort_id}` : "season";
}

function listen() {
  if (state.source) state.source.close();
  state.listening = wantedStream();
  if (state.listening.startsWith("cohort ")) {
    const l = state.league;
    state.source = streamWithToken(
      `/v1/leagues/${l.season}/cohorts/${encodeURIComponent(l.cohort_id)}/events`, (event) => {
        if (event === "ready") setStatus("live");
        if (["ready", "changed", "rebuilt"].includes(event)) scheduleRefresh();
      });
    return;
  }
  const on = state.board.kind === "board" ? `?board=${encodeURIComponent(state.board.board)}` : "";
  const source = new EventSource(`/v1/leaderboards/${state.season}/events${on}`);
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

// A server-sent event stream that needs the learner's token in a header,
// which `EventSource` cannot send: fetch's streamed body, read frame by
// frame; it reconnects like EventSource does, and ends for good on 403/404.
function streamWithToken(url, onEvent) {
  const controller = new AbortController();
  let closed = false;
  let delay = 1000;
  const frame = (block) => {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (event === "ready") delay = 1000;
    if (block.trim() && !block.startsWith(":")) onEvent(event, data.join("\n"));
  };
  (async () => {
    while (!closed) {
      try {
        const resp = await fetch(url, {
          headers: { Authorization: `Bearer ${state.token}`, Accept: "text/event-stream" },
          cache: "no-store", signal: controller.signal });
        if (resp.status === 403 || resp.status === 404) return;
        if (!resp.ok || !resp.body) throw new Error(`status ${resp.status}`);
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value.replace(/\r/g, "");
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            frame(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        }
      } catch (e) {
        if (closed) return;
      }
      if (closed) return;
      setStatus("reconnecting…");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 30000);
    }
  })();
  return { close() { closed = true; controller.abort(); } };
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

// Press a tab: the League view replaces the board (and "You") while it shows.
function show(button, board) {
  for (const b of $("tabs").querySelectorAll("button")) {
    b.setAttribute("aria-pressed", String(b === button));
  }
  state.board = board;
  const league = board.kind === "league";
  $("league").hidden = !league;
  $("board-section").hidden = league;
  if (league) {
    $("me").hidden = true;
    if (!state.countdown) state.countdown = setInterval(tickCountdown, 1000);
  } else if (state.countdown) {
    clearInterval(state.countdown);
    state.countdown = null;
  }
}

function select(button, board) {
  const before = state.board;
  show(button, board);
  // leagues are weekly, and so is every board of a kind
  if ((board.kind === "league" || board.kind === "board") && state.period !== "week") {
    $("period").value = "week";
    go("current");
    return;
  }
  // A board of a kind has its own time zone, so its week of now may be
  // another name than the whole board's: ask for the alias again.
  if (state.alias && (board.kind === "board" || before.kind === "board")) {
    go(state.alias);
    return;
  }
  if (wantedStream() !== state.listening) listen();
  refresh();
}

// A learner's groups become tabs next to the whole board; `#friends=1,2,3`
// adds a friends board. Every tab refetches on the season's hints.
async function tabs() {
  const everyone = $("tabs").querySelector("button");
  everyone.addEventListener("click", () => select(everyone, { kind: "all" }));
  const [body, league] = await Promise.all([
    getJSON(`/v1/users/${state.userId}/groups`, true), leaguesOn()]);
  if (league) addTab("League", { kind: "league" });
  for (const g of (body && body.groups) || []) addTab(g.name, { kind: "group", id: g.group_id, name: g.name });
  if (state.friends.length) addTab("Friends", { kind: "friends" });
  await yourBoards();
}

// "Your boards": each board of a course, a track or a skill the learner
// counts on this week, with their rank there (GET /v1/users/{id}/boards).
async function yourBoards() {
  const mine = await getJSON(`/v1/users/${state.userId}/boards?season=current`, true);
  for (const b of (mine && mine.boards) || []) {
    if (b.board === "global") continue;
    const button = addTab(`${b.title} · ${b.board.split(":")[1]} #${b.rank}`,
                          { kind: "board", board: b.board, title: b.title });
    button.dataset.board = b.board;
  }
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
  select.addEventListener("change", () => {
    if (["league", "board"].includes(state.board.kind) && select.value !== "week") {
      show($("tabs").querySelector("button"), { kind: "all" });
    }
    go(PERIODS[select.value][0]);
  });
}

// -- the League view (docs/contract.md, Leagues) ---------------------------------------------

const title = (tier) => tier.charAt(0).toUpperCase() + tier.slice(1);
const ZONES = { promotion: "▲ promotion", demotion: "▼ demotion" };

function outcomeText(outcome, newTier) {
  if (outcome === "promoted") return `▲ promoted to ${title(newTier)}`;
  if (outcome === "demoted") return `▼ demoted to ${title(newTier)}`;
  return `= stayed in ${title(newTier)}`;
}

function ordinal(n) {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th");
  return `${n}${s}`;
}

// Whether this server plays leagues: a page that names it says so, else the
// learner's league answers (404 while leagues are off).
async function leaguesOn() {
  const meta = document.querySelector('meta[name="laurels-leagues"]');
  if (meta && !meta.content) return false;
  const body = await getJSON(`/v1/users/${state.userId}/league?season=current`, true);
  return Boolean(body && !body.problem);
}

function span(text, cls) {
  const el = document.createElement("span");
  el.textContent = text;
  if (cls) el.className = cls;
  return el;
}

function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const hms = [Math.floor(s / 3600) % 24, Math.floor(s / 60) % 60, s % 60]
    .map((x) => String(x).padStart(2, "0")).join(":");
  return s >= 86400 ? `${Math.floor(s / 86400)}d ${hms}` : hms;
}

// An instant in the learner's own time zone: "Sun 7 Dec, 23:59".
const LOCAL = new Intl.DateTimeFormat(undefined, { weekday: "short", day: "numeric",
                                                   month: "short", hour: "2-digit",
                                                   minute: "2-digit" });
const local = (iso) => LOCAL.format(new Date(Date.parse(iso)));

function tickCountdown() {
  const l = state.league;
  const out = $("league-countdown");
  if (!l || state.board.kind !== "league") return;
  const left = Date.parse(l.ends_at) - Date.now();
  out.dataset.endsAt = l.ends_at;
  if (left > 0) {
    out.textContent = `The week ends in ${duration(left)} (${local(l.ends_at)}); ` +
      `it is decided ${local(l.decides_at)}, your time.`;
  } else if (l.result || decided(l)) {
    out.textContent = `The week ended ${local(l.ends_at)} and is decided.`;
  } else if (l.status !== "placed") {
    out.textContent = `The week ended ${local(l.ends_at)}.`;
  } else {
    const decides = Date.parse(l.decides_at) - Date.now();
    out.textContent = decides > 0
      ? `The week is over: it is decided in ${duration(decides)} (${local(l.decides_at)}).`
      : "The week is over: it is being decided…";
  }
}

// Whether a league's week is decided: its board is then the decision's.
const decided = (l) => Boolean(l.result) || l.entries.some((e) => e.outcome !== undefined);

// The league of the week before this one (its result does not change once decided).
async function lastWeek(body) {
  const season = shiftSeason(body.season, -1);
  if (state.lastWeeks.has(season)) return state.lastWeeks.get(season);
  const last = await getJSON(`/v1/users/${state.userId}/league?season=${season}`, true);
  if (last && !last.problem && last.result) state.lastWeeks.set(season, last);
  return last && !last.problem ? last : null;
}

async function refreshLeague() {
  const board = state.board;
  const body = await getJSON(`/v1/users/${state.userId}/league?season=${state.season}`, true);
  if (!body || state.board !== board) return;
  if (body.problem) {
    $("league-standing").textContent = body.status === 404
      ? "Leagues are not played on this server." : "Your token was not accepted.";
    $("league-board").hidden = true;
    return;
  }
  const last = await lastWeek(body);
  if (state.board !== board) return;
  state.season = body.season;
  state.league = body;
  renderLeague(body, last);
  if (wantedStream() !== state.listening) listen();
  setStatus(`live · updated ${new Date().toLocaleTimeString()}`);
  document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
}

function renderLeague(body, last) {
  const n = body.entries.length;
  $("season").textContent = body.season;
  showRange(null, body.ends_at);
  $("prev").hidden = $("next").hidden = false;
  $("league-tier").textContent = `${title(body.tier)} league`;
  $("league-size").textContent = body.status === "placed" ? `${body.season} · ${n} learners`
    : body.season;
  tickCountdown();
  renderStanding(body, n);
  renderCohort(body);
  renderLastWeek(last);
}

// Why a learner plays no league this week, and what to do (`reason`).
const NOT_PLAYING = {
  no_completion: ["Complete a tutorial this week to join a league.",
                  "You played no league this week."],
  hidden: ["Hidden learners play no league: make your profile public or anonymous, " +
           "then complete a tutorial, to join this week's.", "You were hidden: no league this week."],
  suspended: ["Your account is suspended: you play no league while it is.",
              "Your account was suspended: no league this week."],
};

function renderResult(body) {
  const out = $("league-result");
  out.replaceChildren();
  const r = body.result;
  out.hidden = !r;
  if (!r) return;
  out.append(span("Final ", "label"), span(outcomeText(r.outcome, r.new_tier),
    r.outcome === "promoted" ? "up" : r.outcome === "demoted" ? "down" : ""),
    r.rank === null ? " (unranked)." : ` · ${ordinal(r.rank)} in the ${title(body.tier)} league.`);
}

function renderStanding(body, n) {
  const out = $("league-standing");
  out.replaceChildren();
  const running = Date.parse(body.ends_at) > Date.now();
  renderResult(body);
  if (body.status === "none") {
    const [now, then] = NOT_PLAYING[body.reason] || NOT_PLAYING.no_completion;
    out.textContent = running ? now : then;
    return;
  }
  if (body.status === "pending") {
    out.textContent = `You play in the ${title(body.tier)} league this week: you are placed ` +
      `in a cohort once ${body.waiting_for || "last week"} is decided.`;
    return;
  }
  const me = body.self;
  if (!me) {
    out.textContent = "You are in this cohort, but hidden from its board.";
    return;
  }
  const over = decided(body);
  out.append(`You ${over ? "finished" : "are"} ${ordinal(me.rank)} of ${n} with ${me.score} points`);
  if (me.zone && !over) {
    const [cls, way] = me.zone === "promotion" ? ["up", "up"] : ["down", "down"];
    out.append(": ", span(ZONES[me.zone], cls),
      running ? ` zone: you go ${way} if the week ended now.` : " zone.");
  } else {
    out.append(".");
  }
}

function renderCohort(body) {
  const table = $("league-board");
  const tbody = table.querySelector("tbody");
  table.hidden = body.entries.length === 0;
  const before = new Map([...tbody.rows].map((r) => [r.dataset.key, r.dataset.rank]));
  tbody.replaceChildren();
  const promoted = body.entries.filter((e) => e.zone === "promotion");
  const demoted = body.entries.filter((e) => e.zone === "demotion");
  for (const e of body.entries) {
    const tr = document.createElement("tr");
    tr.dataset.key = e.user_id === null ? `anon-${e.rank}-${e.score}` : String(e.user_id);
    tr.dataset.rank = String(e.rank);
    const mine = e.self === true;  // the API marks the learner's own row, named
    cell(tr, String(e.rank));
    cell(tr, mine ? `${e.display_name} (you)` : e.display_name);
    cell(tr, e.zone ? ZONES[e.zone] : "");
    cell(tr, String(e.score));
    if (e.zone) tr.classList.add(`zone-${e.zone}`);
    if (e === promoted[promoted.length - 1]) tr.classList.add("promote-line");
    if (e === demoted[0]) tr.classList.add("demote-line");
    if (mine) tr.classList.add("me");
    if (before.has(tr.dataset.key) && before.get(tr.dataset.key) !== tr.dataset.rank) {
      tr.classList.add("moved");
    }
    tbody.appendChild(tr);
  }
  const over = decided(body);
  const ranks = (from, to) => (from === to ? `rank ${from} ` : `ranks ${from} to ${to} `) +
    (over ? "went" : from === to ? "goes" : "go");
  const legend = [];
  if (promoted.length) legend.push(`▲ ${ranks(1, promoted[promoted.length - 1].rank)} up a tier`);
  if (demoted.length) {
    legend.push(`▼ ${ranks(demoted[0].rank, demoted[demoted.length - 1].rank)} down a tier`);
  }
  $("league-legend").textContent = !legend.length ? ""
    : over ? `Decided: ${legend.join("; ")}.` : `${legend.join("; ")} when the week is decided.`;
}

function renderLastWeek(last) {
  const out = $("league-last");
  out.replaceChildren();
  if (!last || last.status === "none") return;
  out.append(span("Last week ", "label"), `(${last.season}, ${title(last.tier)} league): `);
  const r = last.result;
  if (!r) {
    out.append(`not decided yet (decided ${local(last.decides_at)}, your time).`);
    return;
  }
  out.append(r.rank === null ? "" : `${ordinal(r.rank)}, `,
    span(outcomeText(r.outcome, r.new_tier),
      r.outcome === "promoted" ? "up" : r.outcome === "demoted" ? "down" : ""), ".");
}

function go(season) {
  state.season = season;
  state.alias = Object.hasOwn(ALIASES, season) ? season : null;
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
  const step = (dir) => SEASON_NAME.test(state.season || "") && state.season !== "all"
    && go(shiftSeason(state.season, dir));
  $("prev").addEventListener("click", () => step(-1));
  $("next").addEventListener("click", () => step(1));
  $("all-notifications").addEventListener("click", showAllNotifications);
  state.friends = (hash.get("friends") || "").split(",").filter((x) => /^[0-9]+$/.test(x)).map(Number)
    .slice(0, 1000);
  if (state.userId) {
    listenInbox();
    tabs();
  }
  go(wanted && (SEASON_NAME.test(wanted) || Object.hasOwn(ALIASES, wanted)) ? wanted : "current");
  periods();
}

start();
