"""Speed and scale benchmarks of the real graph: `python -m benchmarks.run`."""
