"""A small TOML writer (the catalog loader reads TOML; tomllib only reads).

Supports what a device profile needs: nested tables (dicts), strings, ints, floats (nan/inf as
TOML's nan/inf), bools, and arrays of those.  Keys that are None are left out."""
from __future__ import annotations

import math
import re

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    k = str(k)
    return k if _BARE.match(k) else _string(k)


def _string(s: str) -> str:
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        r = repr(v)
        return r if ("." in r or "e" in r or "n" in r) else r + ".0"
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v if x is not None) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML: {v!r}")


def dumps(doc: dict) -> str:
    """TOML text for a dict: scalars first, then sub-tables as [a.b] headers, depth first."""
    lines: list[str] = []

    def emit(table: dict, path: list[str]) -> None:
        scalars = [(k, v) for k, v in table.items() if v is not None and not isinstance(v, dict)]
        subs = [(k, v) for k, v in table.items() if isinstance(v, dict)]
        if path and (scalars or not subs):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(_key(p) for p in path) + "]")
        for k, v in scalars:
            lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in subs:
            emit(v, path + [str(k)])

    emit(doc, [])
    return "\n".join(lines) + "\n"


def dump(doc: dict, path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(doc))
