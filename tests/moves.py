"""Every writer of laurels, and its move in a model machine (issue 63).

A writer is anything that changes PostgreSQL or Redis: each admin and ingest
route, each CLI command that writes, each background loop, each kind and
group lifecycle step. Each is named here with the rule of a state machine
that runs the same domain operation among the others, split at its pause
points or as a fault (tests/integration/test_model_interleaved.py, ...
_kinds.py, ..._faults.py). tests/unit/test_every_writer_is_a_move.py
enumerates the writers from the code (the OpenAPI document's writing
methods, the CLI's commands, `background_loops` with every option on, the
public coroutines of the lifecycle classes) and fails when one is in
neither table below, or names a rule no machine has: a writer added next
month without a move fails the suite the day it lands.

READERS lists what enumerates as a writer's kind but changes nothing of the
stores' data, each with why.
"""

from __future__ import annotations

INTERLEAVED = "InterleavingMachine"
KINDS = "KindsMachine"
FAULTS = "FaultMachine"
CHALLENGES = "ChallengesMachine"

WRITERS: dict[str, tuple[str, str]] = {
    # routes (the OpenAPI document's writing methods)
    "POST /v1/completions": (INTERLEAVED, "ingest"),
    "POST /v1/completions/batch": (INTERLEAVED, "ingest"),
    "PUT /v1/users/{user_id}": (INTERLEAVED, "profile"),
    "DELETE /v1/users/{user_id}": (INTERLEAVED, "erase"),
    "POST /v1/users/{user_id}/notifications/read": (INTERLEAVED, "read_notes"),
    "PUT /v1/groups/{group_id}": (INTERLEAVED, "group_put"),
    "DELETE /v1/groups/{group_id}": (INTERLEAVED, "group_delete"),
    "POST /v1/groups/{group_id}/members": (INTERLEAVED, "group_members"),
    "POST /v1/admin/completions/{completion_id}/void": (INTERLEAVED, "correct"),
    "POST /v1/admin/completions/{completion_id}/restore": (INTERLEAVED, "correct"),
    "POST /v1/admin/users/{user_id}/void": (INTERLEAVED, "correct_learner"),
    "POST /v1/admin/users/{user_id}/restore": (INTERLEAVED, "correct_learner"),
    "POST /v1/admin/users/{user_id}/suspend": (INTERLEAVED, "suspend"),
    "POST /v1/admin/users/{user_id}/unsuspend": (INTERLEAVED, "suspend"),
    "POST /v1/admin/leaderboards/{season}/rebuild": (INTERLEAVED, "rebuild"),
    "PUT /v1/admin/board-kinds/{kind}": (FAULTS, "define_kind"),
    "DELETE /v1/admin/board-kinds/{kind}": (FAULTS, "delete_kind"),
    "POST /v1/admin/webhooks/deliveries/{delivery_id}/retry": (INTERLEAVED, "retry_delivery"),
    "PUT /v1/admin/challenges/{challenge_id}": (CHALLENGES, "define"),
    "DELETE /v1/admin/challenges/{challenge_id}": (CHALLENGES, "delete"),
    "PUT /v1/admin/team-kinds/{team}": (INTERLEAVED, "team_define"),
    "DELETE /v1/admin/team-kinds/{team}": (INTERLEAVED, "team_delete"),
    "POST /v1/challenges/{challenge_id}/join": (CHALLENGES, "join"),
    # CLI commands that write (each calls the route's domain operation)
    "cli serve": (FAULTS, "silent"),  # joins the deployment, beats; its loops below
    "cli projector": (FAULTS, "silent"),
    "cli rebuild": (INTERLEAVED, "rebuild"),
    "cli verify": (INTERLEAVED, "project"),  # it drains the outbox before comparing
    "cli void": (INTERLEAVED, "correct"),
    "cli restore": (INTERLEAVED, "correct"),
    "cli erase": (INTERLEAVED, "erase"),
    "cli suspend": (INTERLEAVED, "suspend"),
    "cli unsuspend": (INTERLEAVED, "suspend"),
    "cli demo": (INTERLEAVED, "ingest"),  # completions and profiles, as a platform's
    "cli webhooks retry": (INTERLEAVED, "retry_delivery"),
    "cli kinds define": (FAULTS, "define_kind"),
    "cli kinds delete": (FAULTS, "delete_kind"),
    "cli challenges define": (CHALLENGES, "define"),
    "cli challenges delete": (CHALLENGES, "delete"),
    "cli challenges join": (CHALLENGES, "join"),
    "cli challenges decide": (CHALLENGES, "decide"),
    "cli teams define": (INTERLEAVED, "team_define"),
    "cli teams delete": (INTERLEAVED, "team_delete"),
    "cli teams board": (INTERLEAVED, "team_read"),  # a read that fills the board (Teams.ready)
    # background loops (runtime.background_loops, every option on)
    "loop projector": (INTERLEAVED, "project"),
    "loop outbox-flush": (INTERLEAVED, "ingest"),  # the fast path's rows, deleted in bulk
    "loop notifier": (INTERLEAVED, "notify"),
    "loop erasures": (INTERLEAVED, "resume_erasures"),
    "loop kind-drops": (FAULTS, "delete_kind"),  # drop_pending: a deletion's keys
    "loop seasons": (INTERLEAVED, "finalize"),  # and prepare, seal: below
    "loop epoch": (FAULTS, "repair"),  # the catch-up after a restart or failover
    "loop leagues": (INTERLEAVED, "place"),  # placement, zone pass, decision: below
    "loop retention": (INTERLEAVED, "retire"),
    "loop deployment": (FAULTS, "silent"),
    "loop webhooks": (INTERLEAVED, "deliver"),
    "loop challenges": (CHALLENGES, "decide"),  # and the watch: below
    "loop windows": (INTERLEAVED, "window"),  # a rolling window's midnight (FAULTS too)
    # the seasons and leagues loops' steps, and the lifecycle steps
    "step prepare": (INTERLEAVED, "prepare"),
    "step finalize_due": (FAULTS, "finalize"),
    "step seal": (INTERLEAVED, "seal"),
    "step zone pass": (INTERLEAVED, "zones"),
    "step decision": (INTERLEAVED, "decide"),
    "fault a board lost": (INTERLEAVED, "lose_board"),
    "BoardKinds.define": (FAULTS, "define_kind"),
    "BoardKinds.delete": (FAULTS, "delete_kind"),
    "BoardKinds.drop_pending": (KINDS, "delete"),
    "BoardKinds.drop_undefined": (FAULTS, "repair"),
    "Challenges.define": (CHALLENGES, "define"),
    "Challenges.delete": (CHALLENGES, "delete"),
    "Challenges.join": (CHALLENGES, "join"),
    "Decider.decide": (CHALLENGES, "decide"),
    "Decider.decide_due": (CHALLENGES, "decide"),
    "Decider.tick": (CHALLENGES, "decide"),
    "Decider.watch": (CHALLENGES, "watch"),
    "Decider.look": (CHALLENGES, "watch_while_erased"),
    "ChallengeErasure.hold": (CHALLENGES, "join_while_erased"),
    "ChallengeErasure.forget": (CHALLENGES, "erase"),
    "Groups.put": (INTERLEAVED, "group_put"),
    "Groups.delete": (INTERLEAVED, "group_delete"),
    "Groups.change_members": (INTERLEAVED, "group_members"),
    "Groups.forget": (INTERLEAVED, "erase"),  # an erasure's step (erasure.Forgets)
    "Teams.define": (INTERLEAVED, "team_define"),
    "Teams.delete": (INTERLEAVED, "team_delete"),
    "Teams.moved": (INTERLEAVED, "group_members"),  # every change of who counts in a team
    "Teams.moved_everywhere": (INTERLEAVED, "suspend"),
    "Teams.ready": (INTERLEAVED, "team_read"),  # a board filled when first read
    "Windows.tick": (INTERLEAVED, "window"),
    "Windows.move": (INTERLEAVED, "window"),
    "Windows.starts": (INTERLEAVED, "window"),  # verify's: the window moved first
    # faults (DESIGN.md: faults are moves too)
    "fault restart from an older snapshot": (FAULTS, "restart_from_snapshot"),
    "fault failover to a replica one step behind": (FAULTS, "failover"),
    "fault one key lost": (FAULTS, "lose_key"),
    "fault a process silent past the heartbeat": (FAULTS, "silent"),
}

READERS: dict[str, str] = {
    "POST /v1/leaderboards/{season}/ranks": "a read whose ids travel in the body",
    "cli migrate": "the schema only, before any process runs (db/migrations)",
    "cli token": "signs a token with the configured secret; no store",
    "cli rebuild-status": "reads a rebuild's row",
    "cli audit": "reads the audit log",
    "cli leagues": "reads a week's leagues",
    "cli challenges show": "reads a challenge and its board",
    "cli teams list": "reads the team kinds",
    "Checker.every": "reads the challenges' ids",
    "Checker.verify": "reads a challenge and its completions (laurels verify --all)",
    "loop hints": "the process's own Pub/Sub subscription and caches",
    "loop privacy": "the process's own copy of who is hidden",
    "loop outbox": "measures the outbox's age",
    "loop webhook-metrics": "measures the deliveries",
    "loop private-files": "rewrites the embedded Valkey's files from what it holds",
    "BoardKinds.live": "reads the kinds",
    "BoardKinds.boards": "reads a kind's boards of a season (the console)",
    "BoardKinds.defined": "reads the kinds",
    "BoardKinds.fresh": "reads the kinds",
    "BoardKinds.find": "reads the kinds",
    "BoardKinds.all": "reads the kinds",
    "BoardKinds.get": "reads a kind",
    "Challenges.find": "reads a challenge",
    "Challenges.get": "reads a challenge",
    "Challenges.page": "reads the challenges",
    "Standings.board": "reads a challenge's board",
    "Standings.live": "reads a challenge's live board (kept a moment in the process)",
    "Standings.around": "reads a challenge's board",
    "Standings.of_learner": "reads a learner's challenges",
    "Groups.get": "reads a group",
    "Teams.all": "reads the team kinds",
    "Teams.get": "reads a team kind",
    "Teams.boards": "reads which team boards Redis keeps",
    "Windows.seasons": "reads which windows have boards",
    "Windows.held_from": "reads a window's marker",
    "Groups.hold": "an erasure's step that takes no lock and writes nothing",
    "Groups.of_learner": "reads a learner's groups",
    "Groups.read_access": "reads who may read a group",
    "Groups.standings": "reads a board",
    "Groups.member_ids": "reads a group's members",
    "Groups.board_top": "reads a board",
    "Groups.board_around": "reads a board",
    "Groups.friends": "reads a board",
}
