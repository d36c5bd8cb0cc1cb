"""The OpenAPI document (`GET /openapi.json`): every operation, whichever
serves it.

FastAPI describes its own routes. The fast lane's operations (api/fast.py)
have no FastAPI route to describe: they are described from the lane's own
table (parameters, request body, responses, the handler's docstring), by
FastAPI's generator, from the same pydantic schemas, so they read exactly
as the other operations do.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import FastAPI, Security
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from starlette.responses import Response

from laurels.api.dependencies import bearer_scheme
from laurels.api.fast import OPERATIONS, Operation
from laurels.api.problems import JSONResponse


class _Parameters:
    """A lane operation's parameters, in the form FastAPI's generator reads
    (a signature). It describes; it is never routed, nor called."""

    def __init__(self, operation: Operation) -> None:
        self.__signature__ = inspect.Signature([
            inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, annotation=p.annotation,
                              default=p.default) for p in operation.params])

    async def __call__(self, **_: Any) -> None:
        raise NotImplementedError("served by the fast lane (api/fast.py)")


def described(operation: Operation) -> APIRoute:
    """A lane operation as FastAPI's generator reads a route."""
    return APIRoute(
        operation.path, _Parameters(operation), methods=[operation.method],
        name=operation.name, tags=list(operation.tags), description=operation.description,
        status_code=operation.status_code, responses=operation.responses,
        openapi_extra=operation.request_body, response_model=None,
        dependencies=[Security(bearer_scheme)] if operation.token else None,
        response_class=Response if operation.stream else JSONResponse)


class App(FastAPI):
    """The FastAPI app, whose OpenAPI document also describes the fast lane's
    operations."""

    def openapi(self) -> dict[str, Any]:
        if not self.openapi_schema:
            self.openapi_schema = get_openapi(
                title=self.title, version=self.version, openapi_version=self.openapi_version,
                description=self.description,
                routes=[*(described(op) for op in OPERATIONS), *self.routes],
                separate_input_output_schemas=self.separate_input_output_schemas)
            problems_as_sent(self.openapi_schema)
        return self.openapi_schema


def problems_as_sent(spec: dict[str, Any]) -> None:
    """Every error is sent as application/problem+json: FastAPI describes a
    response with a model as application/json, so an error's schema moves
    to the media type the service sends (and application/json goes)."""
    for item in spec.get("paths", {}).values():
        for op in item.values():
            for status, response in op.get("responses", {}).items():
                content = response.get("content", {})
                if str(status)[:1] in ("4", "5") and "application/json" in content:
                    schema = content.pop("application/json")
                    problem = content.setdefault("application/problem+json", {})
                    problem.setdefault("schema", schema.get("schema", {}))
