"""Measures of a stored run, without a model: what each agent had in view (`in_view`), how
sound its memories are (`memory_quality`), and the content of its turns and final design
(`content`)."""
