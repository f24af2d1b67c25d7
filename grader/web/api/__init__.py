"""The JSON API (``/api/v1``): one router per audience and the documents' schemas."""
