"""The speed suite's measurements (run through ``benchmarks/speed_suite.py``).

Each module holds one family of measurements; every measurement is a function
``measure_*(ctx) -> list[Row]`` whose docstring says what it times and why the
comparison is fair.
"""
