"""Unique names for topics, groups and client instances (no rocketmq import,
so conftest can use it before the C++ library is loaded)."""

import itertools
import os
import uuid

_COUNTER = itertools.count()


def unique_name(prefix):
    """A topic or group name no other test (or run) uses."""
    return f"{prefix}_{os.getpid()}_{next(_COUNTER)}_{uuid.uuid4().hex[:8]}"
