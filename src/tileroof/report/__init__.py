"""Renderings of a Result's JSON form: terminal table, JSON text, roofline plot.  Nothing here
reads the trace or the IR; the JSON dict is the source of truth."""
