"""The one exception type specscope shows to users as a plain message."""


class SpecscopeError(Exception):
    """A problem the user can fix (bad path, bad config, bad flag): shown without a traceback."""
