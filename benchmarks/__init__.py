"""Speed and scale benchmarks of the real graph (issue 7): `python -m benchmarks.run`."""
