"""The OpenAPI document, true to what the server answers.

FastAPI documents a 422 as its own ``HTTPValidationError``; taskwire answers every error as
``{"detail", "code"}`` (``errors.py``). ``errors(...)`` names the error statuses a route (or a
router: 401 where a key is needed, 503 where the store is read) can answer, and
``document(app)`` adds the ones every route has (400 and 413 where a body is read, 422 where
anything is validated), sets the one error schema on them all and drops FastAPI's validation
schemas. tests/api/test_openapi.py holds the server to it with Schemathesis.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field

ERROR_SCHEMA = "ErrorBody"

_DESCRIPTIONS = {
    400: "A request taskwire cannot serve (see `code`: invalid_page_id, invalid_workspace, ...)",
    401: "Missing or invalid session API key",
    404: "No such conversation (event, sub-agent, permission request)",
    409: "Conflicts with the conversation's state (already running, already answered)",
    413: "Request body over OH_MAX_BODY_BYTES (`body_too_large`)",
    422: "The body or a query parameter does not validate (`invalid_request`)",
    429: "The server is at its subscriber limit; try again later",
    503: "The store (or the conversation's owner) cannot serve now; retry after `Retry-After`",
}


class ErrorBody(BaseModel):
    """Every error response: a sentence for people and a stable code for programs."""

    detail: str = Field(description="What went wrong, readable.")
    code: str = Field(description="A stable code (docs/api-errors.md).")


SSE_EVENT = {
    "type": "object",
    "description": "One Server-Sent Event: `id` is the record's seq, `data` one AG-UI event as JSON.",
    "properties": {
        "id": {"type": "string"},
        "event": {"type": "string"},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
    "required": ["data"],
}


def event_stream() -> dict[str, Any]:
    """The ``openapi_extra`` of a route that answers Server-Sent Events: its 200 is a stream of
    ``SSE_EVENT`` (OpenAPI 3.1: ``schema`` describes each event)."""
    return {
        "responses": {
            "200": {"description": "A stream of events", "content": {"text/event-stream": {"schema": SSE_EVENT}}}
        }
    }


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route for these error statuses, each with the error schema."""
    return {status: {"model": ErrorBody, "description": _DESCRIPTIONS[status]} for status in statuses}


def document(app: FastAPI) -> None:
    """Make ``app.openapi()`` build the true document."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            _true_errors(schema)
            _absent_not_null(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = build  # type: ignore[method-assign]


def _true_errors(schema: dict[str, Any]) -> None:
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components[ERROR_SCHEMA] = ErrorBody.model_json_schema()
    ref = {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            statuses = set()
            if "requestBody" in operation:
                statuses |= {400, 413, 422}  # 400: a body that is not even JSON text
            if operation.get("parameters"):
                statuses.add(422)
            for status in statuses:
                responses.setdefault(str(status), {"description": _DESCRIPTIONS[status]})
            if "422" in responses:
                responses["422"]["description"] = _DESCRIPTIONS[422]  # not FastAPI's "Validation Error"
            for status, response in responses.items():
                if status[0] in "45" and not _own_json(response):
                    # Errors are JSON even on a streaming route (FastAPI gives them its type).
                    response["content"] = {"application/json": {"schema": ref}}


def _absent_not_null(schema: dict[str, Any]) -> None:
    """A query or header parameter is left out, never sent as null (a query string cannot
    say null: a client sending ``kind=null`` sends the text "null"). FastAPI documents an
    optional parameter as ``anyOf [..., null]``; the document drops the null."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path":
                    continue
                param_schema = parameter.get("schema", {})
                choices = param_schema.get("anyOf")
                if not choices:
                    continue
                kept = [choice for choice in choices if choice.get("type") != "null"]
                if len(kept) == len(choices):
                    continue
                del param_schema["anyOf"]
                if len(kept) == 1:
                    param_schema.update(kept[0])
                else:
                    param_schema["anyOf"] = kept


def _own_json(response: dict[str, Any]) -> bool:
    """The response names a JSON body of its own (``/ready``'s), not FastAPI's guess."""
    content = response.get("content", {})
    schema = content.get("application/json", {}).get("schema", {})
    return len(content) == 1 and bool(schema) and not schema.get("$ref", "").endswith("/HTTPValidationError")
