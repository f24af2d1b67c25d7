"""Design contract of judged task 1 (vector_add): golden.py, module_interfaces.yaml, DESIGN.md."""
