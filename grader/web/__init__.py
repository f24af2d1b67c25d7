"""The contest server's app (``kdt-grade serve``): FastAPI over ``grader.service``.

- ``app``: ``create_app(settings)``, the app and its lifetime; ``create_http_app``, the factory of each
  HTTP process of ``kdt-grade serve`` (``grader.serve``);
- ``api/``: the JSON API (``/api/v1``), one router per audience (``contestant``, ``public``, ``admin``)
  and the documents' pydantic models (``schemas``);
- ``pages/``: the HTML pages, one router per audience (``public``, ``contestant``, ``admin``, the API
  reference), their view models (``render``), the scoreboard, the timeline picture, templates, static;
- ``http/``: what the API and the pages share: authentication (``auth``), the cookie session and CSRF,
  the upload reader and admission (``upload``, ``admission``), the HTTP limits (``limits``,
  ``connections``) and the JSON error responses (``error_responses``).

Routes are thin: everything they know of submissions, rules and accounts comes from the service layer.
"""
