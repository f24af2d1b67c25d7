"""``kdt-grade serve``'s processes: the grading process and the HTTP processes it supervises."""
