"""Python keyword arguments as the flags of the ``nrpt`` command line, which parses
and checks them with its own code (so the defaults and the messages are the command's).
"""

from __future__ import annotations

import difflib
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from . import _nrpt

_FLAG_CACHE: Dict[str, Dict[str, bool]] = {}

RENAMED: Dict[str, Dict[str, str]] = {
    "scale": {"model": "target", "shard": "part"},
}
"""The keywords of the previous release still read, for one release, with a
``DeprecationWarning``: by command, the old keyword and today's (the command line's
``--model`` and ``--shard`` of ``nrpt scale``, now ``--target`` and ``--part``)."""


def known_flags(command: str) -> Dict[str, bool]:
    """The keyword arguments of a command (its long flags with underscores) and
    whether each takes a value (``False`` for switches such as ``quick``)."""
    if command not in _FLAG_CACHE:
        _FLAG_CACHE[command] = {
            name.replace("-", "_"): takes for name, takes in _nrpt.flags(command)
        }
    return _FLAG_CACHE[command]


def text(key: str, value: Any) -> str:
    """A value as the command line writes it."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, np.generic):
        return text(key, value.item())
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return ",".join(text(key, v) for v in value)
    raise TypeError(f"{key}: cannot pass a {type(value).__name__} ({value!r})")


def argv(
    command: str,
    function: str,
    options: Mapping[str, Any],
    allowed: Optional[Sequence[str]] = None,
    refused: Optional[Mapping[str, str]] = None,
) -> List[str]:
    """The flags of ``nrpt <command>`` for keyword arguments (``None`` left out):
    ``--key=value``, ``--switch`` for ``True``; a keyword that is not a flag (or not
    in ``allowed``) is a ``TypeError``, one in ``refused`` too, with its reason."""
    known = known_flags(command)
    names = [k for k in known if allowed is None or k in allowed]
    out: List[str] = []
    renamed = RENAMED.get(command, {})
    for key, value in options.items():
        if key in renamed:
            new = renamed[key]
            if new in options:
                raise TypeError(f"{function}() got both {key!r} and {new!r} (the same keyword, renamed)")
            warnings.warn(
                f"{function}({key}=...) is now {function}({new}=...); the old keyword goes in "
                "the next release",
                DeprecationWarning,
                stacklevel=3,
            )
            key = new
        if refused and key in refused:
            raise TypeError(f"{function}() does not take {key!r}: {refused[key]}")
        if key not in names:
            close = difflib.get_close_matches(key, names, 1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{function}() got an unexpected keyword argument {key!r}{hint}")
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if not known[key]:
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{key} must be True or False, got {value!r}")
            if value:
                out.append(flag)
            continue
        # `--flag=value`: a value may start with a minus sign.
        out.append(f"{flag}={text(key, value)}")
    return out
