"""OUR stub, not upstream: `labml.tracker.debug` logs a tensor for the experiment dashboard; here it does nothing."""


def debug(name, value):
    return None
