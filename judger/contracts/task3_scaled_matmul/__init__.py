"""Design contract of judged task 3 (scaled_matmul): golden.py, module_interfaces.yaml, DESIGN.md."""
