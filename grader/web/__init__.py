"""The contest server (``kdt-grade serve``): a FastAPI app over ``grader.service`` (architecture.md, "Rooms").

One module per web concern, routes thin over ``Service`` and the rule modules:

- ``app``: ``create_app(settings)``, the app and its lifetime (the ``Service``, the grading dispatcher);
- ``auth``: the bearer-token dependencies ``current_account``, ``optional_account``, ``admin_account``;
- ``errors``: every refusal and failure as JSON ``{"error", "message"}`` (and the OpenAPI error schema);
- ``upload``: the submission upload, read with a size cap (413 while reading);
- ``grading``: where accepted submissions go (this process's pool, or the Celery workers);
- ``schemas``: the pydantic response models shown in ``/api/v1/openapi.json``;
- ``api_contestant``, ``api_public``, ``api_admin``: one ``APIRouter`` per audience;
- ``server``: running the app on uvicorn.

Pages (HTML) are a separate audience and live in their own modules (``pages*``, templates, static).
"""
