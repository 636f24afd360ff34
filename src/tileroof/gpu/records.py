"""JSON in and out: strict-JSON sanitising, atomic writes, JSON-lines append and read."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path


def jsonable(obj):
    """A strict-JSON version of obj: NaN/inf -> None, tuples/sets -> lists, keys -> str, tensors and
    numpy scalars -> Python numbers, dtypes and other objects -> str."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    item = getattr(obj, "item", None)
    if callable(item) and getattr(obj, "ndim", 0) == 0 and not isinstance(obj, type):
        try:
            return jsonable(item())
        except Exception:  # noqa: BLE001
            pass
    return str(obj)


def dumps_compact(obj) -> str:
    return json.dumps(jsonable(obj), separators=(",", ":"), allow_nan=False)


def write_json_atomic(path, obj) -> None:
    """Write compact JSON to path via a temporary file and rename (a killed run leaves the previous
    complete file, never a half-written one)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(dumps_compact(obj))
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class JsonLines:
    """Append-only record stream, flushed after every record (read by the parent while written)."""

    def __init__(self, path):
        self.path = Path(path)
        self._f = open(self.path, "a", encoding="utf-8")

    def emit(self, rec: dict) -> None:
        self._f.write(dumps_compact(rec) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def read_jsonl(path) -> list[dict]:
    """Every complete record of a JSON-lines file (a torn last line is skipped)."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    except FileNotFoundError:
        pass
    return out


def tail(path, n_chars: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - n_chars))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
