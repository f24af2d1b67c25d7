"""HTTP concerns shared by the API and the pages: authentication, the cookie session, uploads, limits, errors."""
