// <laurels-board>: the board on a platform's own pages, from another origin
// (docs/integrating.md). No framework, no build step, no inline style (the
// styles are a constructed stylesheet, allowed under a strict CSP).
//
//   <script src="https://laurels.example/embed.js" defer></script>
//   <laurels-board season="current" group="class-7b" limit="10"
//                  token="LEARNER_JWT"></laurels-board>
//   <laurels-board board="course:python-101"></laurels-board>
//   <laurels-board view="league" token="LEARNER_JWT"></laurels-board>
//   <laurels-board view="challenge" challenge="december-sql-sprint"></laurels-board>
//   <laurels-board view="teams" team="classes" limit="10"></laurels-board>
//
// Attributes: season (default "current"; any period's name or alias), board
// (default "global"; a board of a course, a track or a skill), group
// (a public group's board, or a members group's with a member's token),
// limit (1 to 100, default 10), token (a learner token: their own row is
// shown under the board), src (the laurels server; default: where this
// script came from), view ("board", the default; "league": the token's
// learner's league of the week, their cohort's board with its zones and
// their own row, or why they play none; "challenge": the board of the
// challenge named by `challenge`, its title, countdown and status, each
// entry with its reward once decided, what its rank would earn before, and
// the token's learner's row; "teams": the teams of the team kind named by
// `team`, ranked on the board and season by their members' scores, a
// members-only group the token may not read shown as "Private team", the
// token's learner's teams marked (and listed under the board when not in
// it)). It listens to the board's hints (a league: its week's; a
// challenge: its own while it runs, then it looks again until the
// challenge is decided; teams: the season's of the board, as their
// members score) and refetches on each.
"use strict";

(() => {
  const ORIGIN = new URL(document.currentScript ? document.currentScript.src : location.href).origin;
  const CSS = `
    :host { display: block; font: 14px/1.4 system-ui, sans-serif; color: #1b1f24; }
    table { width: 100%; border-collapse: collapse; }
    th, td { padding: 4px 8px; text-align: left; border-bottom: 1px solid #e3e6ea; }
    td.score, th.score { text-align: right; font-variant-numeric: tabular-nums; }
    tr.me td { font-weight: 600; background: #fff6d6; }
    caption { text-align: left; font-weight: 600; padding: 4px 8px; }
    p.note { color: #5b6470; margin: 4px 8px; }
    tr.promotion td { background: #e2f1e4; }
    tr.demotion td { background: #fbe6e4; }
    td.zone { white-space: nowrap; font-size: 12px; }
    tr.promotion td.zone { color: #2f6d3a; font-weight: 600; }
    tr.demotion td.zone { color: #b3261e; font-weight: 600; }
    caption .when { font-weight: normal; color: #5b6470; white-space: nowrap; }
    td.reward { white-space: nowrap; }
    td.reward.would { color: #5b6470; font-style: italic; }
    td.private { color: #5b6470; font-style: italic; }
  `;
  const ZONES = { promotion: "▲ promotion", demotion: "▼ demotion" };
  const OUTCOMES = { promoted: "▲ promoted to", demoted: "▼ demoted to", stayed: "= stayed in" };
  const NOT_PLAYING = {
    no_completion: "Complete a tutorial this week to join a league.",
    hidden: "Hidden learners play no league: make your profile public or anonymous to join.",
    suspended: "This account is suspended: no league while it is.",
  };
  const title = (tier) => tier.charAt(0).toUpperCase() + tier.slice(1);

  function subject(token) {
    try {
      const payload = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
      return /^[0-9]+$/.test(payload.sub) ? payload.sub : null;
    } catch (e) {
      return null;
    }
  }

  const METRIC_HEADS = { points: "Points", completions: "Completions", best: "Best" };
  const CHALLENGE_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
  const TEAM_KIND = /^[a-z][a-z0-9_-]{0,31}$/;
  // A team's score: a mean is not a whole number.
  const teamScore = (x) => (Number.isInteger(x) ? String(x) : String(Math.round(x * 10) / 10));
  const AGGREGATE_WORDS = {
    sum: () => "the sum of its members' scores",
    mean: () => "the average of its members' scores",
    top: (n) => `the sum of its ${n} best members' scores`,
  };
  // "00:04:59", or "2d 03:04:05".
  const duration = (ms) => {
    const s = Math.max(0, Math.floor(ms / 1000));
    const hms = [Math.floor(s / 3600) % 24, Math.floor(s / 60) % 60, s % 60]
      .map((x) => String(x).padStart(2, "0")).join(":");
    return s >= 86400 ? `${Math.floor(s / 86400)}d ${hms}` : hms;
  };
  const local = (iso) => new Intl.DateTimeFormat(undefined, {
    weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit",
  }).format(new Date(Date.parse(iso)));
  // Where a challenge is, at `now` by this browser's clock (the server's
  // status first: the two clocks differ a little).
  function challengeWhen(b, now) {
    const starts = Date.parse(b.starts_at), ends = Date.parse(b.ends_at);
    if (b.status === "upcoming") return now < starts ? `starts in ${duration(starts - now)}` : "starting…";
    if (b.status === "active") return now < ends ? `ends in ${duration(ends - now)}` : "ending…";
    return b.decided ? "ended, decided" : "ended: being decided…";
  }
  // The reward a rank earns (null: none).
  const rewardOf = (rewards, rank) => {
    const r = rewards.find((x) => rank !== null && x.from <= rank && rank <= x.to);
    return r ? r.reward : null;
  };
  const boardName = (board) => {
    const [kind, value] = board.split(":", 2);
    return `${kind.charAt(0).toUpperCase()}${kind.slice(1)} · ${value}`;
  };

  class LaurelsBoard extends HTMLElement {
    static get observedAttributes() {
      return ["season", "board", "group", "limit", "token", "src", "view", "heading",
              "challenge", "team"];
    }

    constructor() {
      super();
      this.root = this.attachShadow({ mode: "open" });
      if ("adoptedStyleSheets" in this.root) {
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
        this.root.adoptedStyleSheets = [sheet];
      }
      this.table = document.createElement("table");
      this.note = document.createElement("p");
      this.note.className = "note";
      this.root.append(this.table, this.note);
      this.timer = null;
      this.source = null;
      this.clock = null;  // a challenge's countdown
      this.shown = null;  // the challenge's board last shown
    }

    connectedCallback() { this.restart(); }

    disconnectedCallback() {
      if (this.source) this.source.close();
      this.source = null;
      this.stopClock();
    }

    attributeChangedCallback() { if (this.isConnected) this.restart(); }

    get base() { return (this.getAttribute("src") || ORIGIN).replace(/\/$/, ""); }
    get season() { return encodeURIComponent(this.getAttribute("season") || "current"); }
    get group() { return this.getAttribute("group"); }
    // `?board=` (and `&board=`) for a board of a kind; nothing for the whole board.
    get board() { return this.getAttribute("board") || "global"; }
    on(sep) { return this.board === "global" ? "" : `${sep}board=${encodeURIComponent(this.board)}`; }
    get limit() { return Math.min(100, Math.max(1, Number(this.getAttribute("limit")) || 10)); }
    get token() { return this.getAttribute("token"); }
    get league() { return this.getAttribute("view") === "league"; }
    get challengeView() { return this.getAttribute("view") === "challenge"; }
    get challenge() { return this.getAttribute("challenge") || ""; }
    get teamsView() { return this.getAttribute("view") === "teams"; }
    get team() { return this.getAttribute("team") || ""; }

    boardPath() {
      const g = this.group;
      return g ? `/v1/groups/${encodeURIComponent(g)}/leaderboards/${this.season}`
        : `/v1/leaderboards/${this.season}`;
    }

    restart() {
      if (this.source) this.source.close();
      this.source = null;
      this.stopClock();
      if (this.challengeView) {  // its stream opens once it is known to run
        this.shown = null;
        this.nextCheck = 0;
        this.delay = 1000;
        this.refresh();
        return;
      }
      // EventSource sends no headers: a members group's hints come from its season's stream.
      // A league is played on the week's whole board: its hints, refetched on each.
      // Teams: their members score on the season's board of `board`.
      const events = this.league ? `/v1/leaderboards/${this.season}/events`
        : (this.group && !this.token && !this.teamsView ? `${this.boardPath()}/events`
          : `/v1/leaderboards/${this.season}/events`) + this.on("?");
      this.source = new EventSource(this.base + events);
      this.source.addEventListener("ready", () => this.schedule());
      this.source.addEventListener("changed", () => this.schedule());
      this.source.addEventListener("rebuilt", () => this.schedule());
      this.refresh();
    }

    schedule() {
      if (this.timer) return;
      this.timer = setTimeout(() => { this.timer = null; this.refresh(); }, 100);
    }

    // The body of a 2xx answer; for a problem (4xx), {problem: its detail};
    // null when the server cannot be reached or is unavailable (5xx).
    async get(path) {
      const headers = this.token ? { Authorization: `Bearer ${this.token}` } : {};
      let resp;
      try {
        resp = await fetch(this.base + path, { headers, mode: "cors" });
      } catch (e) {
        return null;
      }
      if (resp.ok) return resp.json();
      if (resp.status >= 500) return null;
      let detail = "";
      try { detail = (await resp.json()).detail || ""; } catch (e) { /* not a problem body */ }
      return { problem: { status: resp.status, detail } };
    }

    // What is wrong with a board that will not come by itself (a 4xx).
    static explain(problem) {
      if (problem.status === 404 && /not configured/.test(problem.detail)) {
        return `This board is not configured on the server (${problem.detail}).`;
      }
      if (problem.status === 404) return `There is no such board (${problem.detail}).`;
      if (problem.status === 401 || problem.status === 403) {
        return `This board needs a learner token that may read it (${problem.detail}).`;
      }
      return `This board cannot be shown (${problem.detail}).`;
    }

    async refresh() {
      if (this.challengeView) return this.refreshChallenge();
      if (this.teamsView) return this.refreshTeams();
      if (this.league) return this.refreshLeague();
      const body = await this.get(`${this.boardPath()}?limit=${this.limit}${this.on("&")}`);
      if (!body) {
        this.note.textContent = "The board is not available right now; retrying.";
        return;
      }
      if (body.problem) {  // asking again will not help: say what is wrong, and stop
        this.note.textContent = LaurelsBoard.explain(body.problem);
        this.dataset.problem = String(body.problem.status);
        if (this.source) this.source.close();
        this.source = null;
        return;
      }
      const uid = this.token ? subject(this.token) : null;
      const me = uid ? await this.get(`${this.boardPath()}/users/${uid}?radius=0${this.on("&")}`)
        : null;
      this.render(body, me && me.user ? me.user : null);
    }

    render(body, me) {
      const table = document.createElement("table");
      const caption = table.createCaption();
      // A board of a kind by its kind and value, as the page names it
      // ("Course · python-101"), or by the host page's `heading`.
      const named = this.getAttribute("heading") || (body.board && body.board !== "global"
        ? boardName(body.board) : "");
      const season = named ? `${named}, ${body.season}` : body.season;
      caption.textContent = this.group ? `${body.name || this.group}: ${season}` : season;
      const head = table.createTHead().insertRow();
      const scored = METRIC_HEADS[body.metric] || "Points";
      for (const [text, cls] of [["#", ""], ["Learner", ""], [scored, "score"]]) {
        const th = document.createElement("th");
        th.textContent = text;
        if (cls) th.className = cls;
        head.appendChild(th);
      }
      const rows = table.createTBody();
      let shown = false;
      for (const e of body.entries) {
        const mine = me && e.user_id !== null && String(e.user_id) === String(me.user_id);
        shown = shown || mine;
        this.row(rows, e.rank, e.display_name, e.score, mine);
      }
      if (me && !shown) this.row(rows, me.rank, me.display_name, me.score, true);
      this.note.textContent = body.entries.length ? "" : "No completions yet.";
      this.table.replaceWith(table);
      this.table = table;
      this.dataset.refreshed = String(Number(this.dataset.refreshed || 0) + 1);
    }

    // The league view: the token's learner's league of the week.
    async refreshLeague() {
      const uid = this.token ? subject(this.token) : null;
      if (!uid) {
        this.note.textContent = "The league view needs a learner token (token=\"...\").";
        this.dataset.problem = "401";
        return;
      }
      const body = await this.get(`/v1/users/${uid}/league?season=${this.season}`);
      if (!body) {
        this.note.textContent = "The league is not available right now; retrying.";
        return;
      }
      if (body.problem) {
        this.note.textContent = body.problem.status === 404
          ? `Leagues are not played on this server (${body.problem.detail}).`
          : LaurelsBoard.explain(body.problem);
        this.dataset.problem = String(body.problem.status);
        if (this.source) this.source.close();
        this.source = null;
        return;
      }
      this.renderLeague(body);
    }

    renderLeague(body) {
      const table = document.createElement("table");
      const caption = table.createCaption();
      const r = body.result;
      caption.textContent = `${title(body.tier)} league, ${body.season}` + (r
        ? `: ${OUTCOMES[r.outcome]} ${title(r.new_tier)}` : "");
      const head = table.createTHead().insertRow();
      for (const [text, cls] of [["#", ""], ["Learner", ""], ["Zone", "zone"], ["Points", "score"]]) {
        const th = document.createElement("th");
        th.textContent = text;
        if (cls) th.className = cls;
        head.appendChild(th);
      }
      const rows = table.createTBody();
      for (const e of body.entries) {
        const tr = rows.insertRow();
        tr.className = [e.self ? "me" : "", e.zone || ""].join(" ").trim();
        for (const [text, cls] of [[e.rank, ""], [e.display_name, ""],
                                   [e.zone ? ZONES[e.zone] : "", "zone"], [e.score, "score"]]) {
          const td = tr.insertCell();
          td.textContent = String(text);
          if (cls) td.className = cls;
        }
      }
      this.note.textContent = body.status === "none" ? NOT_PLAYING[body.reason] || ""
        : body.status === "pending"
          ? `Placed in a cohort once ${body.waiting_for || "last week"} is decided.` : "";
      this.table.replaceWith(table);
      this.table = table;
      this.dataset.refreshed = String(Number(this.dataset.refreshed || 0) + 1);
    }

    // The challenge view: its board, live on its hints while it runs.
    async refreshChallenge() {
      const id = this.challenge;
      if (!CHALLENGE_ID.test(id)) {
        this.note.textContent = "The challenge view needs a challenge's id (challenge=\"...\").";
        this.dataset.problem = "422";
        return;
      }
      const path = `/v1/challenges/${encodeURIComponent(id)}`;
      const [def, body] = await Promise.all([
        this.get(path), this.get(`${path}/leaderboard?limit=${this.limit}`)]);
      if (!def || !body) {
        this.note.textContent = "The challenge is not available right now; retrying.";
        this.startClock();
        return;
      }
      const problem = def.problem || body.problem;
      if (problem) {  // asking again will not help: say what is wrong, and stop
        this.note.textContent = problem.status === 404
          ? `There is no such challenge (${problem.detail}).` : LaurelsBoard.explain(problem);
        this.dataset.problem = String(problem.status);
        if (this.source) this.source.close();
        this.source = null;
        this.stopClock();
        return;
      }
      const uid = this.token ? subject(this.token) : null;
      const me = uid ? await this.get(`${path}/users/${uid}?radius=0`) : null;
      if (!this.shown || this.shown.status !== body.status || this.shown.decided !== body.decided) {
        this.delay = 1000;  // it moved: a due look is at once again
      }
      this.shown = body;
      this.renderChallenge(def, body, me && me.user ? me.user : null);
      if (body.status !== "ended" && !this.source) {
        this.source = new EventSource(`${this.base}${path}/events`);
        this.source.addEventListener("ready", () => this.schedule());
        this.source.addEventListener("changed", () => this.schedule());
      } else if (body.status === "ended" && this.source) {
        this.source.close();  // no more hints: it is decided, or about to be
        this.source = null;
      }
      if (body.decided) this.stopClock(); else this.startClock();
    }

    // The teams view: a team kind's teams on the board and season.
    async refreshTeams() {
      const team = this.team;
      if (!TEAM_KIND.test(team)) {
        this.note.textContent = "The teams view needs a team kind (team=\"...\").";
        this.dataset.problem = "422";
        if (this.source) this.source.close();
        this.source = null;
        return;
      }
      const uid = this.token ? subject(this.token) : null;
      const [body, mine] = await Promise.all([
        this.get(`/v1/teams/${encodeURIComponent(team)}/leaderboards/${this.season}` +
                 `?limit=${this.limit}${this.on("&")}`),
        uid ? this.get(`/v1/users/${uid}/teams?season=${this.season}${this.on("&")}`) : null]);
      if (!body) {
        this.note.textContent = "The teams are not available right now; retrying.";
        return;
      }
      if (body.problem) {  // asking again will not help: say what is wrong, and stop
        this.note.textContent = body.problem.status === 404 && /team kind/.test(body.problem.detail)
          ? `There is no such team kind (${body.problem.detail}).`
          : LaurelsBoard.explain(body.problem);
        this.dataset.problem = String(body.problem.status);
        if (this.source) this.source.close();
        this.source = null;
        return;
      }
      const own = mine && mine.teams ? mine.teams.filter((t) => t.team === body.team) : [];
      this.renderTeams(body, own);
    }

    renderTeams(body, own) {
      const table = document.createElement("table");
      const caption = table.createCaption();
      const named = this.getAttribute("heading") || (body.board && body.board !== "global"
        ? `${body.title}, ${boardName(body.board)}` : body.title);
      caption.textContent = `${named}, ${body.season}`;
      const head = table.createTHead().insertRow();
      for (const [text, cls] of [["#", ""], ["Team", ""], ["Members", "score"], ["Score", "score"]]) {
        const th = document.createElement("th");
        th.textContent = text;
        if (cls) th.className = cls;
        head.appendChild(th);
      }
      const rows = table.createTBody();
      const mine = new Set(own.map((t) => t.group_id));
      const row = (rank, name, members, score, me) => {
        const tr = rows.insertRow();
        if (me) tr.className = "me";
        const cells = [[rank, ""], [name === null ? "Private team" : name,
                                    name === null ? "private" : ""],
                       [members, "score"], [teamScore(score), "score"]];
        for (const [text, cls] of cells) {
          const td = tr.insertCell();
          td.textContent = String(text);
          if (cls) td.className = cls;
        }
      };
      const shown = new Set();
      for (const e of body.entries) {
        const me = e.group_id !== null && mine.has(e.group_id);
        if (me) shown.add(e.group_id);
        row(e.rank, e.name, e.members, e.score, me);
      }
      for (const t of own) if (!shown.has(t.group_id)) row(t.rank, t.name, "", t.score, true);
      const how = (AGGREGATE_WORDS[body.aggregate] || AGGREGATE_WORDS.sum)(body.top);
      this.note.textContent = body.entries.length ? `A team's score: ${how}.` : "No teams yet.";
      this.dataset.total = String(body.total);
      this.table.replaceWith(table);
      this.table = table;
      this.dataset.refreshed = String(Number(this.dataset.refreshed || 0) + 1);
    }

    startClock() {
      if (!this.clock) this.clock = setInterval(() => this.tick(), 1000);
    }

    stopClock() {
      if (this.clock) clearInterval(this.clock);
      this.clock = null;
    }

    // Every second: the countdown; and a look when one is due (it started,
    // it ended, its decision is awaited), backing off while nothing moves.
    tick() {
      const b = this.shown;
      const now = Date.now();
      const when = this.table.querySelector("caption .when");
      if (b && when) when.textContent = challengeWhen(b, now);
      const due = !b || (b.status === "upcoming" && Date.parse(b.starts_at) <= now)
        || (b.status === "active" && Date.parse(b.ends_at) <= now)
        || (b.status === "ended" && !b.decided);
      if (due && now >= (this.nextCheck || 0)) {
        this.nextCheck = now + (this.delay || 1000);
        this.delay = Math.min((this.delay || 1000) * 2, 60000);
        this.schedule();
      }
    }

    renderChallenge(def, body, me) {
      const table = document.createElement("table");
      const caption = table.createCaption();
      const when = document.createElement("span");
      when.className = "when";
      when.textContent = challengeWhen(body, Date.now());
      caption.append(this.getAttribute("heading") || body.title, " · ", when);
      const rewarded = def.rewards.length > 0;
      const head = table.createTHead().insertRow();
      const heads = [["#", ""], ["Learner", ""], ...(rewarded ? [["Reward", "reward"]] : []),
                     [METRIC_HEADS[body.metric] || "Points", "score"]];
      for (const [text, cls] of heads) {
        const th = document.createElement("th");
        th.textContent = text;
        if (cls) th.className = cls;
        head.appendChild(th);
      }
      const rows = table.createTBody();
      const row = (e, mine) => {
        const tr = rows.insertRow();
        if (mine) tr.className = "me";
        // Decided: each entry's reward; before, what its rank would earn.
        const reward = body.decided ? e.reward : rewardOf(def.rewards, e.rank);
        const cells = [[e.rank, ""], [e.display_name, ""],
                       ...(rewarded ? [[reward || "", body.decided ? "reward" : "reward would"]]
                         : []), [e.score, "score"]];
        for (const [text, cls] of cells) {
          const td = tr.insertCell();
          td.textContent = String(text);
          if (cls) td.className = cls;
        }
      };
      let shown = false;
      for (const e of body.entries) {
        const mine = Boolean(me) && (e.user_id === me.user_id ||
          (e.user_id === null && e.rank === me.rank && e.score === me.score));
        shown = shown || mine;
        row(e, mine);
      }
      if (me && !shown) row(me, true);
      this.note.textContent = body.entries.length ? (body.decided ? "The final standings." : "")
        : body.status === "upcoming" ? `It starts ${local(body.starts_at)}: nothing counts before.`
          : "No completions yet.";
      this.dataset.status = body.decided ? "decided" : body.status;
      this.table.replaceWith(table);
      this.table = table;
      this.dataset.refreshed = String(Number(this.dataset.refreshed || 0) + 1);
    }

    row(body, rank, name, score, mine) {
      const tr = body.insertRow();
      if (mine) tr.className = "me";
      for (const [text, cls] of [[rank, ""], [name, ""], [score, "score"]]) {
        const td = tr.insertCell();
        td.textContent = String(text);
        if (cls) td.className = cls;
      }
    }
  }

  if (!customElements.get("laurels-board")) customElements.define("laurels-board", LaurelsBoard);
})();
