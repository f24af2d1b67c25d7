"""The HTML pages: routers, view models, templates and static files."""
