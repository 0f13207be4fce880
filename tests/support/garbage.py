"""Finding reference cycles: what only the cycle collector would free."""

from __future__ import annotations

import collections
import contextlib
import gc


@contextlib.contextmanager
def cycle_collector_off():
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def cyclic_garbage() -> collections.Counter:
    """The types the cycle collector finds unreachable now, by name."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = collections.Counter(type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found
