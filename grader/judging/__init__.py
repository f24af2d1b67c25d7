"""The path of untrusted code: intake checks, static audit, the sandboxed compile and the trusted judge step."""
