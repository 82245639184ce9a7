"""Graph rewrites between the frontend and lowering: each works on the plain graph (graph.py) and declines,
leaving the ops as they are, whenever a match is not exact."""
