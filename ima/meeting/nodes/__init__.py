"""The meeting's graph nodes: setup, router, agent turns, memory updates, review,
documentation and learning."""
