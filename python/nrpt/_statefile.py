"""Controller files: what ``Controller.save`` and ``ExactController.save`` write and
their ``load`` reads.

A file is one JSON object (format 2)::

    {"format": 2, "kind": "nrpt.Controller", "sha256": "<64 hex digits>", "state": {...}}

``state`` is the controller's ``state_dict()`` and ``sha256`` the SHA-256 of its
canonical JSON text (:func:`canonical`: keys sorted, no spaces, ASCII, floats as
Python's ``repr`` writes them, which reads back to the same bits). Loading checks, in
order: that the path is a regular file of at most :data:`MAX_FILE_BYTES` (a device,
FIFO or folder is refused without reading it, and no more than the cap is ever read),
that it is JSON of this layout, its format and kind, the checksum (any edit that
changes a value is found), and then everything ``from_state_dict`` checks. Format 1
(the state dict alone, without a checksum: earlier versions) is refused with a message that
says how to load it anyway.

A one-byte edit is thus refused, unless it leaves every value as it was: a space
replaced by another whitespace character, or an exponent's ``e`` by ``E``; such a file
loads the identical state.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Sequence, Tuple, Union

FORMAT = 2
"""The layout of a controller file (1: the state dict alone, without a checksum)."""

MAX_FILE_BYTES = 128 << 20
"""The most bytes :func:`read` reads: 128 MiB. A state grows with the chains P, at most
65,536 (nrpt's limit): a Controller holds about 330 bytes of JSON a level at its
largest (mid-calibration, every count at 2^53; measured by
``python/tests/test_state_files.py``), an ExactController about 440 (the hex of its
encoding after a few rounds) and at most about 300 more once its counters reach
billions. 65,536 × 750 bytes is 49 MB: the cap leaves more than twice that."""

_KEYS = ("format", "kind", "sha256", "state")

Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def canonical(state: Mapping[str, Any]) -> bytes:
    """The text the checksum covers: ``state`` as JSON with sorted keys, no spaces,
    ASCII, and no NaN or infinity (``ValueError``)."""
    try:
        text = json.dumps(
            state, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
        )
    except RecursionError:
        raise ValueError("the state is nested too deeply to be a controller's") from None
    return text.encode("ascii")


def digest(state: Mapping[str, Any]) -> str:
    """SHA-256 of :func:`canonical`, lowercase hex."""
    return hashlib.sha256(canonical(state)).hexdigest()


def write(path: Path, kind: str, state: Mapping[str, Any]) -> None:
    """Writes ``state`` (a ``state_dict()``) to ``path`` as a file of ``kind``, whole or
    not at all: into a temporary file beside it (``.NAME.TOKEN.tmp``), flushed to disk,
    then renamed over ``path``. A crash or an error while writing leaves the previous
    file at ``path`` as it was."""
    doc = {"format": FORMAT, "kind": kind, "sha256": digest(state), "state": state}
    text = json.dumps(doc, allow_nan=False).encode("ascii")
    target = _name(path)
    folder, base = os.path.split(os.path.abspath(target))
    tmp = os.path.join(folder, f".{base}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read(path: Path, kind: str) -> Dict[str, Any]:
    """The state dict of the file at ``path``, written by :func:`write` for ``kind``:
    read with the cap, parsed, its format, kind and checksum checked. ``ValueError``
    names the file and what is wrong; ``TypeError`` for a path that is not one;
    ``OSError`` where the system cannot open it."""
    name = _name(path)
    raw = _read_capped(path, name)
    try:
        doc = json.loads(
            raw.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant
        )
    except (ValueError, RecursionError) as err:
        raise ValueError(f"{name} is not a saved nrpt controller (not JSON: {err})") from None
    expected = f"a {kind} file: {{format, kind, sha256, state}}"
    if not isinstance(doc, dict):
        raise ValueError(f"{name} is not {expected}")
    old = doc.get("format")
    if isinstance(old, str):
        if old == kind and "sha256" not in doc:
            raise ValueError(
                f"{name} was written by an earlier version of nrpt (file format 1: the state "
                f"alone, without a checksum); this version reads format {FORMAT} only. If "
                f"you trust the file, load it with "
                f"{kind}.from_state_dict(json.load(open(path))) (checked like any state "
                f"dict, without a checksum) and save() it again in format {FORMAT}"
            )
        raise ValueError(f"{name} is not {expected} (it says format {old!r})")
    if sorted(doc) != sorted(_KEYS):
        raise ValueError(f"{name} is not {expected}: it has the keys {sorted(doc)}")
    if isinstance(old, bool) or not isinstance(old, int) or old != FORMAT:
        raise ValueError(
            f"{name} says it has format {old!r}, and this nrpt reads format {FORMAT}: it was "
            f"written by another version of nrpt (or that byte is damaged)"
        )
    if doc["kind"] != kind:
        raise ValueError(f"{name} holds {doc['kind']!r}, not {kind!r}")
    sha = doc["sha256"]
    if not (isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
        raise ValueError(f"{name}: sha256 must be 64 lowercase hex digits, got {sha!r}")
    state = doc["state"]
    if not isinstance(state, dict):
        raise ValueError(f"{name}: state must be a JSON object, got {type(state).__name__}")
    try:
        actual = digest(state)
    except ValueError as err:
        raise ValueError(f"{name} is damaged: {err}") from None
    if actual != sha:
        raise ValueError(
            f"{name} is damaged: its SHA-256 checksum does not match (the file changed after "
            f"save() wrote it)"
        )
    return state


def _name(path: Any) -> str:
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    name = os.fspath(path)
    return os.fsdecode(name)


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, for messages."""
    for test, what in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def _check_regular(st: os.stat_result, name: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(
            f"{name} is {_kind(st.st_mode)}, not a regular file: a controller is loaded from "
            f"the file its save() wrote"
        )
    if st.st_size > MAX_FILE_BYTES:
        raise ValueError(_too_large(name))


def _too_large(name: str) -> str:
    return (
        f"{name} is larger than {MAX_FILE_BYTES >> 20} MiB, more than any controller's state "
        f"(65,536 chains at most): refused unread"
    )


def _read_capped(path: Path, name: str) -> bytes:
    """The bytes of the regular file ``path``, at most :data:`MAX_FILE_BYTES`: anything
    else is refused before it is opened (``stat``), and again on the descriptor opened
    without blocking (``O_NONBLOCK``: a FIFO swapped in meanwhile cannot hang it), and
    reading stops one byte past the cap."""
    _check_regular(os.stat(path), name)
    flags = os.O_RDONLY
    for extra in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_BINARY"):
        flags |= getattr(os, extra, 0)
    fd = os.open(path, flags)
    try:
        _check_regular(os.fstat(fd), name)
        chunks: List[bytes] = []
        total = 0
        while total <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_FILE_BYTES:
            raise ValueError(_too_large(name))
    finally:
        os.close(fd)
    return b"".join(chunks)


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} appears twice in one object")
        out[k] = v
    return out


def _no_constant(text: str) -> NoReturn:
    raise ValueError(f"{text} is not a number a saved controller holds")


# -- checks of state dicts, shared by the controllers' from_state_dict ----------------


def fail(where: str, message: str) -> NoReturn:
    raise ValueError(f"not a saved nrpt controller: {where} {message}")


def mapping(value: Any, where: str) -> Dict[str, Any]:
    """``value`` as a dict (``TypeError`` unless it is a mapping with string keys)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{where} must be a dict (as state_dict() returns), got {type(value).__name__}")
    out = dict(value)
    bad = [k for k in out if not isinstance(k, str)]
    if bad:
        raise TypeError(f"{where} must have string keys, got {bad[0]!r}")
    return out


def keys(d: Mapping[str, Any], where: str, required: Sequence[str], optional: Sequence[str] = ()) -> None:
    """Every required key present and no key beyond the required and optional ones."""
    missing = [k for k in required if k not in d]
    if missing:
        fail(where, f"lacks {', '.join(map(repr, missing))}")
    unknown = sorted(k for k in d if k not in required and k not in optional)
    if unknown:
        fail(where, f"has unknown keys {', '.join(map(repr, unknown))}")


def integer(value: Any, where: str, low: int, high: int) -> int:
    """An int (not a bool) within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} must be an int, got {value!r}")
    if not low <= value <= high:
        fail(where, f"must be between {low} and {high}, got {value}")
    return value


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where} must be a bool, got {value!r}")
    return value


def finite_floats(value: Any, where: str, low: Optional[float] = None) -> List[float]:
    """A list of finite real numbers (ints or floats, not bools), each at least ``low``."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{where} must be a list of numbers, got {type(value).__name__}")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{where}[{i}] must be a number, got {v!r}")
        try:
            x = float(v)
        except OverflowError:
            fail(f"{where}[{i}]", "is too large for a float")
        if not (x == x and abs(x) != float("inf")) or (low is not None and x < low):
            bound = "finite" if low is None else f"finite and at least {low}"
            fail(f"{where}[{i}]", f"must be {bound}, got {v!r}")
        out.append(x)
    return out
