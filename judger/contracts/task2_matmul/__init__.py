"""Design contract of judged task 2 (matmul): golden.py, module_interfaces.yaml, DESIGN.md."""
