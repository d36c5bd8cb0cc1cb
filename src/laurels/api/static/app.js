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
// The rolling windows (`7d`, `30d`) are one season each, moving at each
// local midnight: no season before or after them.
const PERIODS = { week: ["current", "This week"], day: ["current-day", "Today"],
                  month: ["current-month", "This month"], all: ["all", "All time"],
                  "7d": ["last-7d", "Last 7 days"], "30d": ["last-30d", "Last 30 days"] };
const ALIASES = { current: "week", "current-day": "day", "current-month": "month" };
const SEASON_NAME = /^([0-9]{4}-W[0-9]{2}|[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{2}|all|last-7d|last-30d)$/;
// A season with none before or after it: all time, a rolling window.
const single = (season) => season === "all" || /^last-/.test(season);

function periodOf(season) {
  if (season === "all") return "all";
  if (season.startsWith("last-")) return season.slice(5);  // `7d`, `30d`
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
function showRange(startsAt, endsAt, window) {
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
  const when = window ? "moves at each midnight"
    : ends > Date.now() ? `resets ${fmt.format(ends)}` : "ended";
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
  showRange(body.starts_at, body.ends_at, single(body.season) && body.period !== "all");
  $("prev").hidden = $("next").hidden = single(body.season);
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
  if (n.kind === "challenge_result") {
    const known = CH.known.get(n.data.challenge_id);
    return `${n.data.title || challengeName(n.data.challenge_id)} is over: you finished ` +
      `${ordinal(n.data.rank)} ${scored(known ? known.metric : "points", n.data.score)}` +
      (n.data.reward ? `; your reward: ${n.data.reward}.` : ".");
  }
  // A challenge by its title; a board of a course, a track or a skill by its
  // kind's title and value, as its tab is ("Skill · python"); the whole
  // board by its week.
  const where = n.data.challenge_id ? `the challenge ${challengeName(n.data.challenge_id)}`
    : n.data.board_title ? `${n.data.board_title}, ${n.season}` : n.season;
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

// A notification's words, and when: a challenge's by its title, not its
// `challenge:...` season.
function fillNotification(li, n) {
  const when = n.updated_at || n.created_at;
  const season = n.data.challenge_id ? challengeName(n.data.challenge_id) : n.season;
  li.replaceChildren(describe(n), " ", span(`${season} · ${ago(when)}`, "when"));
  li.title = local(when);
}

function addNotification(n, atTop) {
  const li = document.createElement("li");
  fillNotification(li, n);
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
  // A challenge this page has not listed (deleted, or ended long ago) is
  // named by its id until its title comes.
  const id = n.data.challenge_id;
  if (id && !CH.known.has(id)) {
    getJSON(`/v1/challenges/${encodeURIComponent(id)}`, false).then((c) => {
      if (!c || c.problem) return;
      CH.known.set(id, { title: c.title, metric: c.metric });
      if (li.isConnected) fillNotification(li, n);
    });
  }
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
  refreshTeams(state.season, board.kind === "board" ? board.board : "global", body.metric);
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
  // The challenges first: a challenge's notices are named by its title.
  const [body] = await Promise.all([getJSON(`/v1/users/${state.userId}/notifications`, true),
                                    CH.loaded]);
  if (body && body.notifications) body.notifications.forEach((n) => addNotification(n, false));
  const url = `/v1/users/${state.userId}/notifications/events?access_token=${encodeURIComponent(state.token)}`;
  state.inbox = new EventSource(url);
  state.inbox.addEventListener("notification", (ev) => {
    const n = JSON.parse(ev.data);
    addNotification(n, true);
    scheduleRefresh();
    if (n.data.challenge_id) scheduleChallenges();  // a rank, or the result, changed
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
  for (const p of ["day", "month", "all", "7d", "30d"]) {
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
  refreshTeams(state.season, "global", "points");
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

// -- challenges (docs/contract.md, "Challenges: boards with a start and an end") --------------

// The challenges shown: the active and upcoming ones (anyone's), and the
// learner's own (joined, or taken part in) with their rank, the last ended
// ones with their result and reward. `open` is the one whose board shows
// (live on its hints while it runs); `known`, every challenge's title and
// metric met so far (a challenge's notices are named by its title).
const CH = { list: [], byId: new Map(), known: new Map(), open: null, chosen: false,
             source: null, listening: null, timer: null, tick: null, loaded: null,
             nextCheck: 0, delay: 1000, seen: "", problems: new Map() };
const ENDED_SHOWN = 5;  // the learner's last ended challenges, with their results
const STATUS_ORDER = { active: 0, upcoming: 1, ended: 2 };
const STATUS_WORDS = { active: "live", upcoming: "upcoming", ended: "ended" };
const METRIC_HEADS = { points: "Points", completions: "Completions", best: "Best" };
const METRIC_WORDS = { points: "points", completions: "completions", best: "best score" };
const JOIN_REFUSED = { challenge_full: "This challenge is full.",
                       challenge_ended: "This challenge has ended." };

const challengeName = (id) => (CH.known.has(id) ? CH.known.get(id).title : id);
const enc = encodeURIComponent;

// What counts on a challenge: every tutorial, or a board of a kind's ("Course · sql-201").
function boardWords(board) {
  if (board === "global") return "every tutorial";
  const [kind, value] = board.split(":", 2);
  return `${kind.charAt(0).toUpperCase()}${kind.slice(1)} · ${value}`;
}

// The reward a rank earns (null: none).
function rewardOf(c, rank) {
  const r = (c.rewards || []).find((x) => rank !== null && x.from <= rank && rank <= x.to);
  return r ? r.reward : null;
}

function rewardsText(rewards) {
  return rewards.map((r) => `${r.from === r.to ? ordinal(r.from)
    : `${ordinal(r.from)}–${ordinal(r.to)}`}: ${r.reward}`).join(" · ");
}

function scheduleChallenges() {
  if (CH.timer) return;
  CH.timer = setTimeout(() => { CH.timer = null; loadChallenges(); }, 100);
}

async function loadChallenges() {
  const [active, upcoming, mine] = await Promise.all([
    getJSON("/v1/challenges?status=active&limit=100", false),
    getJSON("/v1/challenges?status=upcoming&limit=100", false),
    state.userId ? getJSON(`/v1/users/${state.userId}/challenges`, true) : null]);
  if (!active || active.problem || !upcoming || upcoming.problem) return;
  const byId = new Map();
  for (const c of [...active.challenges, ...upcoming.challenges]) byId.set(c.challenge_id, c);
  let ended = 0;
  for (const c of (mine && mine.challenges) || []) {  // newest end first
    if (!byId.has(c.challenge_id) && c.status === "ended" && ++ended > ENDED_SHOWN) continue;
    byId.set(c.challenge_id, { ...byId.get(c.challenge_id), ...c, mine: true });
  }
  const at = (c) => Date.parse(c.status === "upcoming" ? c.starts_at : c.ends_at);
  CH.list = [...byId.values()].sort((a, b) => STATUS_ORDER[a.status] - STATUS_ORDER[b.status]
    || (a.status === "ended" ? at(b) - at(a) : at(a) - at(b))
    || (a.challenge_id < b.challenge_id ? -1 : 1));
  CH.byId = byId;
  for (const c of CH.list) CH.known.set(c.challenge_id, { title: c.title, metric: c.metric });
  // Whether anything moved since the last look: a look that is due (a start,
  // an end, a decision awaited) backs off while nothing does.
  const seen = CH.list.map((c) => `${c.challenge_id}:${c.status}:${c.decided}`).join(" ");
  if (seen !== CH.seen) CH.delay = 1000;
  CH.seen = seen;
  if (CH.open && !byId.has(CH.open)) CH.open = null;  // deleted
  if (!CH.chosen && !CH.open) {  // the first running one the learner plays, else any running one
    const running = CH.list.filter((c) => c.status === "active");
    const playing = running.find((c) => c.mine && (c.rank !== null || c.joined_at));
    CH.open = (playing || running[0] || {}).challenge_id || null;
  }
  renderChallenges();
  listenChallenge();
  await refreshChallenge();
}

function renderChallenges() {
  const list = $("challenge-list");
  list.replaceChildren(...CH.list.map(challengeCard));
  $("challenges").hidden = CH.list.length === 0;
  tickChallenges();
  if (!CH.tick && CH.list.length) CH.tick = setInterval(tickChallenges, 1000);
}

function challengeCard(c) {
  const li = document.createElement("li");
  li.className = `challenge ${c.status}`;
  li.dataset.challengeId = c.challenge_id;
  li.dataset.status = c.decided ? "decided" : c.status;
  const head = document.createElement("h3");
  head.append(span(c.title, "name"), " ", span(c.decided ? "decided" : STATUS_WORDS[c.status],
                                               `badge ${c.status}`));
  const meta = document.createElement("p");
  meta.className = "meta";
  meta.textContent = [boardWords(c.board), `by ${METRIC_WORDS[c.metric] || c.metric}`,
    `${c.participants}${c.max_size ? ` of ${c.max_size}` : ""} taking part`].join(" · ");
  const countdown = document.createElement("p");
  countdown.className = "countdown";
  countdown.setAttribute("role", "timer");
  countdown.dataset.startsAt = c.starts_at;
  countdown.dataset.endsAt = c.ends_at;
  li.append(head, meta, countdown, standingOf(c));
  if (c.rewards.length) {
    const rewards = document.createElement("p");
    rewards.className = "rewards";
    rewards.textContent = `Rewards: ${rewardsText(c.rewards)}`;
    li.appendChild(rewards);
  }
  const actions = document.createElement("p");
  actions.className = "actions";
  const full = c.max_size !== null && c.participants >= c.max_size;
  if (state.userId && c.join === "required" && !c.joined_at && c.status !== "ended" && !full) {
    const join = document.createElement("button");
    join.type = "button";
    join.className = "join";
    join.textContent = "Join";
    join.setAttribute("aria-label", `Join ${c.title}`);
    join.addEventListener("click", () => joinChallenge(c, join));
    actions.appendChild(join);
  }
  const board = document.createElement("button");
  board.type = "button";
  board.className = "show";
  board.textContent = "Board";
  board.setAttribute("aria-label", `${c.title}: board`);
  board.setAttribute("aria-pressed", String(CH.open === c.challenge_id));
  board.addEventListener("click", () => openChallenge(c.challenge_id));
  actions.appendChild(board);
  li.appendChild(actions);
  const refused = document.createElement("p");
  refused.className = "problem";
  refused.setAttribute("role", "alert");
  refused.textContent = CH.problems.get(c.challenge_id) || "";
  li.appendChild(refused);
  return li;
}

// Where the learner stands: their result once decided, their rank while it
// runs, or what to do to take part.
function standingOf(c) {
  const out = document.createElement("p");
  out.className = "standing";
  if (!state.userId) {
    out.textContent = c.join === "required" ? "Learners join it to take part." : "";
    return out;
  }
  const ranked = c.rank !== null && c.rank !== undefined;
  if (c.decided) {
    if (!ranked) {
      out.textContent = c.mine ? "You were not ranked." : "";
      return out;
    }
    out.className = "standing result";
    out.append(span("Final ", "label"), `${ordinal(c.rank)} ${scored(c.metric, c.score)}`);
    out.append(c.reward ? " · reward: " : " · no reward.");
    if (c.reward) out.append(span(c.reward, "reward"));
    return out;
  }
  const ended = c.status === "ended";
  if (ranked) {
    const would = rewardOf(c, c.rank);
    out.append(`You ${ended ? "finished" : "are"} ${ordinal(c.rank)} ${scored(c.metric, c.score)}`);
    if (would && !ended) out.append(" (", span(would, "reward"), " if it ended now)");
    out.append(".");
    return out;
  }
  const what = c.board === "global" ? "a tutorial" : `a tutorial of ${boardWords(c.board)}`;
  if (c.joined_at) {
    out.textContent = `You joined ${local(c.joined_at)}: ` + (c.status === "upcoming"
      ? "your completions count from the start." : `complete ${what} to rank.`);
  } else if (c.join === "required") {
    out.textContent = ended ? "" : c.max_size !== null && c.participants >= c.max_size
      ? "This challenge is full." : `Join it, then complete ${what}.`;
  } else if (!ended) {
    out.textContent = `Open to everyone: complete ${what} ` +
      (c.status === "upcoming" ? "once it starts." : "to take part.");
  }
  return out;
}

function countdownText(c, now) {
  const starts = Date.parse(c.starts_at), ends = Date.parse(c.ends_at);
  if (c.status === "upcoming") {
    return now < starts ? `Starts in ${duration(starts - now)} (${local(c.starts_at)}); ` +
      `ends ${local(c.ends_at)}, your time.` : "Starting…";
  }
  if (c.status === "active") {
    return now < ends ? `Ends in ${duration(ends - now)} (${local(c.ends_at)}, your time).`
      : "Ending…";
  }
  return c.decided ? `Ended ${local(c.ends_at)}; decided.`
    : `Ended ${local(c.ends_at)}: the results are being decided…`;
}

// Every second: the countdowns; and a look at the server when one is due
// (a start or an end passed, a decision awaited), backing off while
// nothing changes (the browser's clock is not the server's).
function tickChallenges() {
  const now = Date.now();
  let due = false;
  for (const li of $("challenge-list").children) {
    const c = CH.byId.get(li.dataset.challengeId);
    if (!c) continue;
    li.querySelector(".countdown").textContent = countdownText(c, now);
    due = due || (c.status === "upcoming" && Date.parse(c.starts_at) <= now)
      || (c.status === "active" && Date.parse(c.ends_at) <= now)
      || (c.status === "ended" && !c.decided);
  }
  if (due && now >= CH.nextCheck) {
    CH.nextCheck = now + CH.delay;
    CH.delay = Math.min(CH.delay * 2, 60000);
    scheduleChallenges();
  }
}

async function joinChallenge(c, button) {
  button.disabled = true;
  let resp = null;
  try {
    resp = await fetch(`/v1/challenges/${enc(c.challenge_id)}/join`, {
      method: "POST", headers: { Authorization: `Bearer ${state.token}` } });
  } catch (e) { /* the server cannot be reached: said below */ }
  if (resp && resp.ok) {
    CH.problems.delete(c.challenge_id);
  } else {
    const body = resp ? await resp.json().catch(() => ({})) : {};
    CH.problems.set(c.challenge_id, JOIN_REFUSED[body.code] ||
      `Not joined: ${body.detail || "the server cannot be reached"}.`);
  }
  await loadChallenges();
}

function openChallenge(id) {
  CH.chosen = true;
  CH.open = CH.open === id ? null : id;
  renderChallenges();
  listenChallenge();
  refreshChallenge();
}

// The open challenge's hints while it runs: its board is refetched on each
// (and on every reconnect); an ended one's board is decided, or about to be.
function listenChallenge() {
  const c = CH.open ? CH.byId.get(CH.open) : null;
  const wanted = c && c.status !== "ended" ? c.challenge_id : null;
  if (CH.listening === wanted) return;
  if (CH.source) CH.source.close();
  CH.source = null;
  CH.listening = wanted;
  if (!wanted) return;
  const source = new EventSource(`/v1/challenges/${enc(wanted)}/events`);
  source.addEventListener("ready", scheduleChallenges);
  source.addEventListener("changed", scheduleChallenges);
  CH.source = source;
}

async function refreshChallenge() {
  const id = CH.open;
  $("challenge").hidden = !id;
  if (!id) return;
  const c = CH.byId.get(id);
  const ranked = state.userId && c.rank !== null && c.rank !== undefined;
  const [body, me] = await Promise.all([
    getJSON(`/v1/challenges/${enc(id)}/leaderboard?limit=10`, false),
    ranked ? getJSON(`/v1/challenges/${enc(id)}/users/${state.userId}?radius=0`, true) : null]);
  if (CH.open !== id || !body || body.problem) return;
  renderChallengeBoard(c, body, me && !me.problem ? me.user : null);
}

function renderChallengeBoard(c, body, me) {
  $("challenge-name").textContent = `${body.title}: top 10`;
  $("challenge-total").textContent = `(${body.total} ranked, ` +
    `${body.decided ? "decided" : STATUS_WORDS[body.status]}, ties: ${body.tie_policy})`;
  const table = $("challenge-board");
  const rewarded = c.rewards.length > 0;
  table.classList.toggle("rewarded", rewarded);
  table.querySelector("th.score").textContent = METRIC_HEADS[body.metric] || "Points";
  const tbody = table.querySelector("tbody");
  const before = new Map([...tbody.rows].map((r) => [r.dataset.key, r.dataset.rank]));
  tbody.replaceChildren();
  const row = (e, mine) => {
    const tr = document.createElement("tr");
    tr.dataset.key = e.user_id === null ? `anon-${e.rank}-${e.score}` : String(e.user_id);
    tr.dataset.rank = String(e.rank);
    cell(tr, String(e.rank));
    cell(tr, mine ? `${e.display_name} (you)` : e.display_name);
    // Decided: each entry's reward; while it runs, the one its rank would earn.
    const reward = body.decided ? e.reward : rewardOf(c, e.rank);
    cell(tr, reward || "");
    if (!body.decided && reward) tr.cells[2].className = "would";
    cell(tr, String(e.score));
    if (mine) tr.classList.add("me");
    if (before.has(tr.dataset.key) && before.get(tr.dataset.key) !== tr.dataset.rank) {
      tr.classList.add("moved");
    }
    tbody.appendChild(tr);
  };
  let shown = false;
  for (const e of body.entries) {
    const mine = Boolean(me) && (e.user_id === me.user_id ||
      (e.user_id === null && e.rank === me.rank && e.score === me.score));
    shown = shown || mine;
    row(e, mine);
  }
  if (me && !shown) row({ ...me, reward: me.reward }, true);
  table.hidden = tbody.rows.length === 0;
  const empty = $("challenge-empty");
  empty.hidden = tbody.rows.length > 0;
  empty.textContent = body.status === "upcoming"
    ? `It starts ${local(body.starts_at)}, your time: nothing counts before.` : "No completions yet.";
  $("challenge-legend").textContent = body.decided
    ? "The final standings, decided at the end: later corrections do not change them."
    : rewarded ? "Rewards in italics: what each rank would earn if it ended now." : "";
  document.body.dataset.challengeRefreshed =
    String(Number(document.body.dataset.challengeRefreshed || 0) + 1);
}

// -- "your team" (docs/contract.md, "Team boards") ------------------------------------------

// The learner's teams (each group of a team kind they are in) on the board
// shown (the whole board, or the board of a kind whose tab is pressed) in
// the season shown, refreshed with it: each team's rank among its kind's
// teams, its score, what the learner adds to it, and the kind's first teams
// (a members-only team the learner is not in is a "Private team").
const TEAMS = { seq: 0 };
const TEAMS_SHOWN = 5;

// A team's score: a mean is not a whole number.
const teamScore = (x) => (Number.isInteger(x) ? String(x) : String(Math.round(x * 10) / 10));

function amount(metric, x) {
  const one = x === 1 ? "" : "s";
  if (metric === "completions") return `${teamScore(x)} completion${one}`;
  if (metric === "best") return `${teamScore(x)} in best scores`;
  return `${teamScore(x)} point${one}`;
}

function aggregateWords(kind) {
  if (kind.aggregate === "mean") return "the average of its members' scores";
  if (kind.aggregate === "top") return `the sum of its ${kind.top} best members' scores`;
  return "the sum of its members' scores";
}

async function refreshTeams(season, board, metric) {
  if (!state.userId) return;
  const seq = ++TEAMS.seq;
  const on = board === "global" ? "" : `&board=${enc(board)}`;
  const mine = await getJSON(`/v1/users/${state.userId}/teams?season=${enc(season)}${on}`, true);
  if (seq !== TEAMS.seq || !mine) return;
  const teams = mine.problem ? [] : mine.teams;
  const kinds = [...new Set(teams.map((t) => t.team))];
  const boards = await Promise.all(kinds.map((k) => getJSON(
    `/v1/teams/${enc(k)}/leaderboards/${enc(season)}?limit=${TEAMS_SHOWN}${on}`, true)));
  if (seq !== TEAMS.seq) return;
  const byKind = new Map(kinds.map((k, i) => [k, boards[i] && !boards[i].problem ? boards[i]
    : { title: k, aggregate: "sum", top: null, entries: [], season }]));
  const kindTitle = (t) => byKind.get(t.team).title;
  const sorted = [...teams].sort((a, b) => kindTitle(a).localeCompare(kindTitle(b))
    || a.name.localeCompare(b.name));
  $("team-list").replaceChildren(...sorted.map((t) => teamCard(t, byKind.get(t.team),
                                                               metric || "points")));
  $("teams-title-text").textContent = sorted.length > 1 ? "Your teams" : "Your team";
  const shown = byKind.size ? [...byKind.values()][0].season : season;
  $("teams-season").textContent = board === "global" ? shown : `${boardWords(board)}, ${shown}`;
  $("your-teams").hidden = sorted.length === 0;
  document.body.dataset.teamsRefreshed =
    String(Number(document.body.dataset.teamsRefreshed || 0) + 1);
}

function teamCard(t, kind, metric) {
  const li = document.createElement("li");
  li.className = "team";
  li.dataset.team = t.team;
  li.dataset.groupId = t.group_id;
  const head = document.createElement("h3");
  head.append(span(t.name, "name"), " ", span(kind.title, "kind"));
  const standing = document.createElement("p");
  standing.className = "standing";
  standing.append(span(ordinal(t.rank), "rank"), ` of ${t.total} · ${amount(metric, t.score)}`);
  const adds = document.createElement("p");
  adds.className = "contribution";
  const c = t.contribution;
  if (kind.aggregate === "top" && c === 0) {
    adds.textContent = `Only its ${kind.top} best members count: ` +
      "you are not among them yet.";
  } else if (c === 0) {
    adds.textContent = "You add nothing yet: complete a tutorial to add to it.";
  } else if (kind.aggregate === "mean") {
    adds.textContent = `You add ${teamScore(c)} to its average.`;
  } else {
    adds.textContent = `You add ${amount(metric, c)}` +
      (kind.aggregate === "top" ? ` (you are among its ${kind.top} best).` : ".");
  }
  const how = document.createElement("p");
  how.className = "how";
  how.textContent = `A team's score: ${aggregateWords(kind)}.`;
  const top = document.createElement("ol");
  top.className = "board team-top";
  top.setAttribute("aria-label", `${kind.title}: the first teams`);
  const row = (e, mine) => {
    const item = document.createElement("li");
    const named = e.name === null ? span("Private team", "private") : span(e.name);
    item.append(span(String(e.rank)), named, span(teamScore(e.score)));
    if (mine) item.classList.add("me");
    top.appendChild(item);
  };
  let listed = false;
  for (const e of kind.entries) {
    const mine = e.group_id === t.group_id;
    listed = listed || mine;
    row(e, mine);
  }
  if (!listed && kind.entries.length) row(t, true);
  li.append(head, standing, adds, how, top);
  return li;
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
  const step = (dir) => SEASON_NAME.test(state.season || "") && !single(state.season)
    && go(shiftSeason(state.season, dir));
  $("prev").addEventListener("click", () => step(-1));
  $("next").addEventListener("click", () => step(1));
  $("all-notifications").addEventListener("click", showAllNotifications);
  state.friends = (hash.get("friends") || "").split(",").filter((x) => /^[0-9]+$/.test(x)).map(Number)
    .slice(0, 1000);
  CH.loaded = loadChallenges();
  if (state.userId) {
    listenInbox();
    tabs();
  }
  go(wanted && (SEASON_NAME.test(wanted) || Object.hasOwn(ALIASES, wanted)) ? wanted : "current");
  periods();
}

start();
