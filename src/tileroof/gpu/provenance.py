"""Where a measurement came from: GPU, driver, clocks, software versions, commit, date, command.

The nvidia-smi parser is a pure function; everything that touches the machine is wrapped so a
missing tool gives an "error" entry instead of an exception."""
from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from .records import write_json_atomic

SMI_FIELDS = ("name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm",
              "clocks.max.mem", "temperature.gpu", "power.draw")
_SMI_KEYS = {"name": "gpu", "driver_version": "driver", "clocks.sm": "sm_clock_mhz",
             "clocks.mem": "mem_clock_mhz", "clocks.max.sm": "max_sm_clock_mhz",
             "clocks.max.mem": "max_mem_clock_mhz", "temperature.gpu": "temperature_c",
             "power.draw": "power_w"}
_NUM = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%]*)\s*$")


def _num(text: str):
    """'1980 MHz' -> 1980, '345.21 W' -> 345.21, '[N/A]' -> None, other text -> the text."""
    t = text.strip()
    if not t or t.strip("[]").lower() in ("n/a", "not supported", "unknown error"):
        return None
    m = _NUM.match(t)
    if not m:
        return t
    v = float(m.group(1))
    return int(v) if v.is_integer() and "." not in m.group(1) else v


def parse_smi_csv(text: str) -> list[dict]:
    """Parse `nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader` output, one dict per GPU.

    Fields are comma-separated; the GPU name never contains a comma in practice, but a line with
    more fields than expected keeps the extra ones joined into the name."""
    gpus = []
    n = len(SMI_FIELDS)
    for line in text.splitlines():
        if not line.strip():
            continue
        raw = line.split(",")
        if len(raw) < n:
            gpus.append({"unparsed": line.strip()})
            continue
        if len(raw) > n:  # a comma inside the name
            extra = len(raw) - n
            raw = [",".join(raw[: extra + 1])] + raw[extra + 1:]
        parts = [p.strip() for p in raw]
        d = {}
        for field, raw in zip(SMI_FIELDS, parts):
            key = _SMI_KEYS[field]
            d[key] = raw if field in ("name", "driver_version") else _num(raw)
        gpus.append(d)
    return gpus


def query_smi(index: int = 0, timeout: float = 20.0) -> dict:
    """One GPU's nvidia-smi reading (name, driver, SM/mem clocks, max clocks, temperature, power)."""
    cmd = ["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    if out.returncode != 0:
        return {"error": f"nvidia-smi rc={out.returncode}: {out.stderr.strip()[:300]}"}
    gpus = parse_smi_csv(out.stdout)
    if not gpus:
        return {"error": "nvidia-smi printed nothing"}
    d = gpus[min(index, len(gpus) - 1)]
    d["time_utc"] = utc_now()
    return d


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_stamp() -> str:
    """A file-name-safe UTC timestamp, e.g. 20261118T101500Z."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def git_commit() -> str | None:
    """env TILEROOF_COMMIT when set (the device tool copies the working tree onto an older
    checkout, so its own `git rev-parse` names the wrong commit), else `git rev-parse HEAD` of the
    checkout this file lives in (with '+dirty' when the tree has changes), else None."""
    if os.environ.get("TILEROOF_COMMIT"):
        return os.environ["TILEROOF_COMMIT"]
    root = _repo_root()
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            sha = out.stdout.strip()
            st = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
            return sha + ("+dirty" if st.returncode == 0 and st.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def tileroof_version() -> str | None:
    try:
        import importlib
        v = getattr(importlib.import_module("tileroof"), "__version__", None)
        if v:
            return str(v)
    except Exception:
        pass
    try:
        from importlib.metadata import version
        return version("tileroof")
    except Exception:
        pass
    py = _repo_root() / "pyproject.toml"
    try:
        m = re.search(r'^version\s*=\s*"([^"]+)"', py.read_text(), re.M)
        return m.group(1) if m else None
    except OSError:
        return None


def package_version(name: str, import_it: bool = False) -> str | None:
    """Version from the installed metadata, or from module.__version__ when import_it is set."""
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        pass
    if import_it:
        try:
            mod = __import__(name)
            return str(getattr(mod, "__version__", None))
        except Exception:
            return None
    return None


def torch_info(touch_gpu: bool = True) -> dict:
    """torch / CUDA versions and, with touch_gpu, the device's facts (this creates a CUDA
    context).  Imports torch only when called."""
    d: dict = {}
    try:
        import torch
        d["torch"] = torch.__version__
        d["cuda"] = torch.version.cuda
        if touch_gpu and torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            d["torch_device_name"] = torch.cuda.get_device_name(0)
            d["sm_count"] = p.multi_processor_count
            d["compute_capability"] = f"{p.major}.{p.minor}"
            d["total_memory_bytes"] = p.total_memory
            d["l2_cache_bytes"] = getattr(p, "L2_cache_size", None)
        elif touch_gpu:
            d["torch_device_name"] = None
    except Exception as e:  # noqa: BLE001
        d["torch_error"] = f"{type(e).__name__}: {e}"
    return d


def base_provenance(tool: str, touch_gpu: bool = True, module: str | None = None) -> dict:
    """Everything except the clocks-after reading (the caller adds smi_after at the end).
    module: the tileroof.gpu module that ran, where it is not named `tool` (gemm_pipe --nows)."""
    smi = query_smi()
    prov = {
        "tool": tool,
        "date_utc": utc_now(),
        "hostname": platform.node(),
        "command": " ".join(shlex.quote(a) for a in [os.path.basename(sys.executable), "-m",
                                                     f"tileroof.gpu.{module or tool}", *sys.argv[1:]]),
        "argv": list(sys.argv),
        "python": platform.python_version(),
        "gpu": smi.get("gpu"),
        "driver": smi.get("driver"),
        "smi_before": smi,
        "tileroof_version": tileroof_version(),
        "tileroof_commit": git_commit(),
        "triton": package_version("triton"),
        "tilelang": package_version("tilelang"),
        "cupy": package_version("cupy-cuda13x") or package_version("cupy"),
    }
    prov.update(torch_info(touch_gpu))
    return prov


def write_record(out_dir: Path, prov: dict, t0: float, body: dict, method: str) -> Path:
    """Finish a probe's record (the clocks after, the wall time since t0) and write it as
    `<tool>-<UTC stamp>.json` under out_dir (records.write_json_atomic), schema
    `tileroof.<tool>/1` (the tool named by base_provenance)."""
    tool = prov["tool"]
    prov["smi_after"] = query_smi()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{tool}-{utc_stamp()}.json"
    write_json_atomic(path, {"schema": f"tileroof.{tool}/1", "provenance": prov, "wall_s": time.time() - t0, **body,
                             "method": method})
    return path
