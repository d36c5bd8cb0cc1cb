"""HTTP routes of the platform's writes (docs/contract.md, Writes): batches
of completions, a learner's name and visibility, erasure. A single
completion is the fast lane's (api/fast.py)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import ValidationError

from laurels.api import schemas as s
from laurels.api.dependencies import admin_token, ingest_token, json_body, small_json_body
from laurels.api.params import UserIdPath, path_user_id, valid
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import services
from laurels.core.validation import BatchIn, ProfileIn, describe, validate_profile

router = APIRouter()


@router.post("/v1/completions/batch", tags=["writes"], dependencies=[Depends(ingest_token)],
             openapi_extra=s.batch_schema(),
             responses={200: {"model": s.BatchOut},
                        **s.problems(401, 403, 413, 415, 422, 503)})
async def post_batch(request: Request) -> Response:
    """Record 1 to 1000 completions; one independent result per item, in order."""
    body = await json_body(request)
    if not isinstance(body, dict):
        raise Problem("validation_error", "body must be {\"completions\": [...]}")
    try:
        batch = BatchIn.model_validate(body)
    except ValidationError as exc:
        raise Problem("validation_error", describe(exc)) from None
    outcomes = await services(request).ingestor.record(batch.completions)
    return JSONResponse({"results": [o.body() for o in outcomes]})


@router.put("/v1/users/{user_id}", tags=["writes"], dependencies=[Depends(ingest_token)],
            openapi_extra=s.body_schema(ProfileIn),
            responses={200: {"model": s.LearnerOut}, **s.problems(401, 403, 410, 415, 422, 503)})
async def put_user(user_id: UserIdPath, request: Request) -> Response:
    """Set a learner's display name and/or visibility."""
    uid = path_user_id(user_id)
    body = valid(validate_profile, await small_json_body(request))
    learner = await services(request).learners.update(uid, body)
    return JSONResponse(learner.body())


@router.delete("/v1/users/{user_id}", tags=["writes"], status_code=204,
               dependencies=[Depends(admin_token)],
               responses=s.problems(401, 403, 422, 503))
async def delete_user(request: Request, user_id: UserIdPath) -> Response:
    """Erase a learner: completions, name and notifications, from every board."""
    await services(request).learners.erase(path_user_id(user_id))
    return Response(status_code=204)
