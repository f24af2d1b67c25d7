"""The contestant's HTTP client of the contest server (no database, torch or simulator)."""
