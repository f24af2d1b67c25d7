"""``GET /api/v1/docs``: the JSON API's reference as a page of our own, made from the served OpenAPI
document (``/api/v1/openapi.json``). FastAPI's Swagger page would load its JavaScript and CSS from a CDN
at run time; this page loads nothing but ``/static/style.css`` and runs no script.
"""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .base import page

router = APIRouter(include_in_schema=False)
METHODS = ("get", "post", "put", "patch", "delete")


def endpoints(document: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per operation of an OpenAPI 3 ``document``, in path order: ``method`` (upper case),
    ``path``, ``summary``, ``description``, ``tags``, ``auth`` ("none", "token", "token (optional)"),
    ``parameters`` [{name, in, required, type}], ``body`` (media types) and ``responses`` [(code, text)]."""
    entries = []
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            security = operation.get("security", document.get("security"))
            auth = "none" if not security else ("token (optional)" if {} in security else "token")
            entries.append({
                "method": method.upper(), "path": path, "summary": operation.get("summary", ""),
                "description": operation.get("description", ""), "tags": operation.get("tags", []),
                "auth": auth,
                "parameters": [{"name": p["name"], "in": p["in"], "required": bool(p.get("required")),
                                "type": _type_of(p.get("schema", {}))} for p in operation.get("parameters", [])],
                "body": sorted(operation.get("requestBody", {}).get("content", {})),
                "responses": [(code, r.get("description", "")) for code, r in sorted(operation.get("responses", {}).items())],
            })
    return entries


def _type_of(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type_of(s) for s in schema["anyOf"])
    return schema.get("type", schema.get("$ref", "").rsplit("/", 1)[-1] or "any")


@router.get("/api/v1/docs")
def api_docs(request: Request) -> Response:
    """The API reference page (no token needed; the admin operations say they need an admin token)."""
    document = request.app.openapi()
    return page(request, "api_docs.html", endpoints=endpoints(document), title=document["info"]["title"],
                api_version=document["info"]["version"])
