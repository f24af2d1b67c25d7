"""Design contract of judged task 4 (flash_attention): golden.py, module_interfaces.yaml, DESIGN.md."""
