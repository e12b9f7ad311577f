"""The one exception type specscope shows to users as a plain message.

A leaf module that every layer may import (engine, core, app) without depending on another
layer: the engine says what is wrong with a model in these words, and the core and the app
show them without a traceback.
"""


class SpecscopeError(Exception):
    """A problem the user can fix (bad path, bad config, bad flag): shown without a traceback."""
