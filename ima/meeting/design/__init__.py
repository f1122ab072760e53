"""The final design: its structure, its parts as small structured calls, the checks of
its texts against the brief, and its rendering."""
