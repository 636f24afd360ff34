"""Errors a user can act on.  The CLI prints them as one line; nothing from TVM leaks through."""


class TileroofError(Exception):
    """Bad input or an unsupported construct, with a message that says what to do."""
