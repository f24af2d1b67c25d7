"""Reading a submission upload (multipart/form-data, field ``file``) with a size cap, while it arrives.

The body is never held whole before its size is known: a declared ``Content-Length`` above the cap is
refused before a byte is read, and a body without one (chunked) is counted as it streams in and refused
as soon as it passes the cap. The cap is the intake's limit (``submission_max_bytes``) plus room for the
multipart framing; the file itself must then fit the intake's limit exactly.
"""
from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import Request
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import ClientDisconnect

from grader.display import count_text
from grader.refusals import BadRequest, TooLarge

MULTIPART_OVERHEAD = 16 * 1024  # boundaries, part headers, a few small fields
FIELD = "file"


def _too_large(max_bytes: int) -> TooLarge:
    return TooLarge(f"the upload is larger than the limit of {count_text(max_bytes)} bytes for a submission; "
                    "nothing was stored")


async def _capped(request: Request, cap: int, max_bytes: int) -> AsyncIterator[bytes]:
    seen = 0
    try:
        async for chunk in request.stream():
            seen += len(chunk)
            if seen > cap:
                raise _too_large(max_bytes)
            yield chunk
    except ClientDisconnect:  # the client went away mid-upload: a refusal nobody reads, not a server error
        raise BadRequest("the upload was interrupted before its end; nothing was stored",
                         code="upload_interrupted") from None


async def read_upload(request: Request, max_bytes: int) -> tuple[str, bytes]:
    """``(file name, bytes)`` of the multipart field ``file``. Raises ``TooLarge`` (413) past ``max_bytes``
    and ``BadRequest`` (400) for a body that is not multipart/form-data or has no ``file`` field."""
    name, data, _fields = await read_upload_form(request, max_bytes)
    return name, data


async def read_upload_form(request: Request, max_bytes: int,
                           require_file: bool = True) -> tuple[str, bytes, dict[str, str]]:
    """``read_upload`` plus the form's small text fields (at most 8, each at most 16 KiB), such as the
    page form's ``csrf``; same errors. Without ``require_file``, a form without the file gives ``("", b"")``."""
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise BadRequest("send the file as multipart/form-data in the field `file` "
                         "(curl -F file=@kernels.py ...)", code="bad_upload")
    cap = max_bytes + MULTIPART_OVERHEAD
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BadRequest("malformed Content-Length header", code="bad_upload")
        if int(declared) > cap:
            raise _too_large(max_bytes)
    parser = MultiPartParser(request.headers, _capped(request, cap, max_bytes), max_files=1, max_fields=8,
                             max_part_size=MULTIPART_OVERHEAD)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise BadRequest(f"malformed multipart body: {exc.message}", code="bad_upload") from None
    try:
        upload = form.get(FIELD)
        if isinstance(upload, UploadFile):
            name, data = upload.filename or "submission.py", await upload.read()
        elif require_file:
            raise BadRequest("the form has no file in the field `file`", code="bad_upload")
        else:
            name, data = "", b""
        fields = {key: value for key, value in form.multi_items() if isinstance(value, str)}
    finally:
        await form.close()
    if len(data) > max_bytes:
        raise TooLarge(f"the file is {len(data)} bytes; the limit is {max_bytes} bytes. Nothing was stored.")
    return name, data, fields
