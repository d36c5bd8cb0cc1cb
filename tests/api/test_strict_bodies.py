"""Issue 65, point 4: a field a body does not define was silently ignored:
a misspelled "tag" recorded a completion without its course (and the
corrected replay was then 409), "visibilty": "hidden" left the learner
public. Every request body of /openapi.json (enumerated, checked against the
valid bodies below) refuses an unknown field with 422 naming it and changes
nothing; a batch item likewise, alone; the schemas say
additionalProperties: false."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, completion

# One valid body of every operation that takes one: (method, path template)
# -> (the path to call, the body). A new operation with a body fails the
# first test until it is added here.
VALID: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("post", "/v1/completions"): ("/v1/completions", completion("s1", 5, 3)),
    ("post", "/v1/completions/batch"): ("/v1/completions/batch",
                                        {"completions": [completion("s2", 5, 3)]}),
    ("put", "/v1/users/{user_id}"): ("/v1/users/5", {"display_name": "Ada"}),
    ("post", "/v1/users/{user_id}/notifications/read"): ("/v1/users/5/notifications/read",
                                                         {"ids": []}),
    ("put", "/v1/groups/{group_id}"): ("/v1/groups/g1", {"name": "Class"}),
    ("post", "/v1/groups/{group_id}/members"): ("/v1/groups/g1/members", {"add": [5]}),
    ("post", "/v1/leaderboards/{season}/ranks"): ("/v1/leaderboards/current/ranks",
                                                  {"user_ids": [5]}),
    ("post", "/v1/admin/completions/{completion_id}/void"): (
        "/v1/admin/completions/s1/void", {"reason": "test"}),
    ("post", "/v1/admin/completions/{completion_id}/restore"): (
        "/v1/admin/completions/s1/restore", {"reason": "test"}),
    ("post", "/v1/admin/users/{user_id}/void"): ("/v1/admin/users/5/void", {"reason": "test"}),
    ("post", "/v1/admin/users/{user_id}/restore"): ("/v1/admin/users/5/restore", {}),
    ("post", "/v1/admin/users/{user_id}/suspend"): ("/v1/admin/users/5/suspend",
                                                    {"reason": "test"}),
    ("post", "/v1/admin/users/{user_id}/unsuspend"): ("/v1/admin/users/5/unsuspend", {}),
    ("put", "/v1/admin/board-kinds/{kind}"): ("/v1/admin/board-kinds/course",
                                              {"title": "Courses"}),
    ("put", "/v1/admin/challenges/{challenge_id}"): (
        "/v1/admin/challenges/sprint", {"title": "Sprint", "starts_at": "2099-01-01T00:00:00Z",
                                        "ends_at": "2099-01-08T00:00:00Z"}),
    ("post", "/v1/challenges/{challenge_id}/join"): ("/v1/challenges/sprint/join",
                                                     {"user_id": 5}),
    ("put", "/v1/admin/team-kinds/{team}"): ("/v1/admin/team-kinds/classes",
                                             {"title": "Classes"}),
}
# The operations whose body comes with another token than the admin's.
TOKENS = {("post", "/v1/challenges/{challenge_id}/join"): INGEST}


def operations_with_bodies(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(method, path): op["requestBody"]["content"]["application/json"]["schema"]
            for path, item in spec["paths"].items() for method, op in item.items()
            if isinstance(op, dict) and "requestBody" in op}


def closed(schema: dict[str, Any], spec: dict[str, Any],
           defs: dict[str, Any] | None = None) -> bool:
    """Whether every object of `schema` (its items', its references') says
    additionalProperties: false (`defs`: the body's own `$defs`, at any depth)."""
    defs = {**(defs or {}), **schema.get("$defs", {})}
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if schema["$ref"].startswith("#/$defs/"):
            return closed(defs[name], spec, defs)
        return closed(spec["components"]["schemas"][name], spec, defs)
    if "properties" in schema and schema.get("additionalProperties") is not False:
        return False
    subs = [*schema.get("properties", {}).values(), *schema.get("anyOf", []),
            *([schema["items"]] if isinstance(schema.get("items"), dict) else [])]
    return all(closed(sub, spec, defs) for sub in subs)


async def test_every_body_refuses_an_unknown_field_and_says_so(serve: ApiFactory) -> None:
    server = await serve()
    admin = server.client(ADMIN)
    spec = (await server.get("/openapi.json")).json()
    bodies = operations_with_bodies(spec)
    assert set(bodies) == set(VALID), "each operation with a body has a valid one above"
    for (method, template), schema in bodies.items():
        assert closed(schema, spec), f"{method} {template}: additionalProperties is not false"
        path, body = VALID[(method, template)]
        client = server.client(TOKENS[method, template]) if (method, template) in TOKENS \
            else admin
        answer = await client.request(method.upper(), path, json={**body, "zzz_extra": 1})
        assert_problem(answer, 422, "validation_error")
        assert answer.json()["detail"] == "unknown field 'zzz_extra'", (template, answer.json())


async def test_a_misspelled_field_changes_nothing(serve: ApiFactory) -> None:
    server = await serve()
    ingest = server.client(INGEST)
    typo = {**completion("c1", 7, 5), "tag": ["course:sql"]}
    answer = await ingest.post("/v1/completions", json=typo)
    assert_problem(answer, 422, "validation_error")
    assert answer.json()["detail"] == "unknown field 'tag'"
    fixed = await ingest.post("/v1/completions", json={**completion("c1", 7, 5),
                                                       "tags": ["course:sql"]})
    assert fixed.status_code == 201, fixed.text  # not 409: nothing was recorded before
    assert_problem(await ingest.put("/v1/users/7", json={"visibilty": "hidden"}), 422,
                   "validation_error")
    top = (await server.get("/v1/leaderboards/current")).json()  # (201: applied already)
    assert [e["user_id"] for e in top["entries"]] == [7]  # still public
    batch = await ingest.post("/v1/completions/batch", json={"completions": [
        completion("c2", 8, 1), {**completion("c3", 9, 1), "pionts": 4}]})
    assert batch.status_code == 200
    first, second = batch.json()["results"]
    assert first["status"] == "recorded"
    assert second["status"] == "rejected"
    assert second["error"]["detail"] == "unknown field 'pionts'", second
