"""Benchmarks, run side by side in one process so every figure has its baseline from the same run.

Each suite returns rows (dicts) and prints a table headed by the device; `webgpu-torch bench <suite>` runs one.
Speed is measured here only — never by timed tests.
"""
