"""Command line: parses arguments and calls the library; every user error is one line on stderr."""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import sys
from pathlib import Path

from .errors import TileroofError


def parse_value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_pairs(pairs: list[str] | None, what: str) -> dict:
    out = {}
    for p in pairs or []:
        if "=" not in p:
            raise TileroofError(f"{what} {p!r} is not NAME=VALUE")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def load_kernel(spec: str):
    """'path/file.py:name' -> (the object, {}, name, {}); 'case:NAME' -> a corpus case's kernel,
    params, name and the --taken shares it was measured with."""
    if spec.startswith("case:"):
        from .corpus import CASES

        name = spec[5:]
        if name not in CASES:
            raise TileroofError(f"unknown corpus case {name!r}; `tileroof cases` lists them")
        c = CASES[name]
        return c.kernel, dict(c.params), name, dict(c.taken or {})
    if ":" not in spec:
        raise TileroofError(f"kernel {spec!r} must be given as path/to/file.py:kernel_name (or case:NAME)")
    path, name = spec.rsplit(":", 1)
    file = Path(path)
    if not file.exists():
        raise TileroofError(f"no such file: {path}")
    mod_name = f"_tileroof_user_{abs(hash(file.resolve()))}"
    spec_obj = importlib.util.spec_from_file_location(mod_name, file)
    module = importlib.util.module_from_spec(spec_obj)
    sys.modules[mod_name] = module
    sys.path.insert(0, str(file.parent.resolve()))
    try:
        spec_obj.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        raise TileroofError(f"importing {path} failed: {type(exc).__name__}: {exc}") from None
    finally:
        sys.path.pop(0)
    if not hasattr(module, name):
        raise TileroofError(f"{path} has no attribute {name!r}")
    return getattr(module, name), {}, name, {}


def _analyze(args):
    import tileroof

    kernel, params, label, taken = load_kernel(args.kernel)
    params.update({k: parse_value(v) for k, v in parse_pairs(args.param, "-p").items()})
    assume = {}
    for k, v in parse_pairs(args.assume, "--assume").items():
        try:
            assume[k] = float(parse_value(v))
        except (TypeError, ValueError):
            raise TileroofError(f"--assume {k}={v}: the value must be a number") from None
    # a corpus case brings the branch shares it was measured with (its mask's density); --taken
    # overrides them name by name
    taken.update(parse_pairs(args.taken, "--taken"))
    result = tileroof.analyze(kernel, device=args.device, assume=assume, taken=taken, **params)
    d = result.to_dict()
    if args.json:
        print(json.dumps(d, indent=1, default=str))
    else:
        from .report.terminal import render

        render(d)
    if args.plot:
        from .report.plot import roofline

        try:
            roofline(d, args.plot)
        except ImportError:
            raise TileroofError("--plot needs matplotlib: pip install 'tileroof[plot]'") from None
        if not args.json:
            print(f"roofline plot written to {args.plot}")


def _rank(args):
    from .rank import rank_configs

    kernel, base, label, _ = load_kernel(args.kernel)
    base.update({k: parse_value(v) for k, v in parse_pairs(args.param, "-p").items()})
    grid = {k: [parse_value(x) for x in v.split(",")] for k, v in parse_pairs(args.sweep, "--sweep").items()}
    configs = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())] if grid else [{}]
    ranked = rank_configs(kernel, base, configs, device=args.device)
    if args.json:
        print(json.dumps(ranked, indent=1, default=str))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{label}: {len(ranked)} configs ranked by estimated time on {args.device or 'h200'}")
    for c in ("#", "config", "time", "bound", "TFLOP/s"):
        t.add_column(c)
    for i, r in enumerate(ranked[: args.top], 1):
        if r.get("error"):
            t.add_row(str(i), json.dumps(r["config"]), "-", r["error"][:60], "-")
            continue
        if r.get("launch_error"):
            t.add_row(str(i), json.dumps(r["config"]), "-", "does not launch: " + r["launch_error"][:60], "-")
            continue
        t.add_row(str(i), json.dumps(r["config"]), f"{r['estimated_time'] * 1e3:.3f} ms", r["bound"],
                  f"{r['total_flops'] / r['estimated_time'] / 1e12:.1f}")
    Console().print(t)


def _devices(args):
    from . import devices

    rows = []
    for key in devices.catalog_keys():
        d = devices.load(key)
        rows.append(d.describe())
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title="device catalog (h200 is the default)")
    for c in ("key", "name", "SMs", "DRAM GB/s", "L2 MB", "fp16 TC TFLOP/s", "fp32 TFLOP/s", "calibrated"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["key"], r["name"], str(r["sm_count"]), f"{r['dram_bw_GBps']:.0f}", f"{r['l2_MB']:.0f}",
                  f"{r['tensor_TFLOPs'].get('fp16', 0):.0f}", f"{r['cuda_TFLOPs'].get('fp32', 0):.1f}",
                  _calibration_summary(r))
    Console().print(t)


def _calibration_summary(row: dict) -> str:
    """'-', 'N measured', or 'N carried from <gpu>' (a profile of the same chip, devices/transfer.toml)."""
    n = len(row["calibrated"])
    if not n:
        return "-"
    if row["calibrated_on"] != row["key"]:
        return f"{n} carried from {row['calibrated_on']}"
    return f"{n} measured"


def _cases(args):
    from .corpus import CASES

    for name, c in CASES.items():
        print(f"{name}\t{c.sweep or '-'}\t{json.dumps(c.params, default=str)}")


def _score(args):
    from .score import main as score_main

    return score_main(args.results, args.check, args.device)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tileroof", description="How fast can a TileLang kernel run? From its TIR alone.")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze", help="count and time one kernel")
    a.add_argument("kernel", help="path/file.py:kernel_name, or case:NAME for a corpus case")
    a.add_argument("-p", "--param", action="append", help="kernel parameter NAME=VALUE (repeat)")
    a.add_argument("--assume", action="append", help="value of a run-time quantity NAME=VALUE (repeat)")
    a.add_argument("--taken", action="append",
                   help="NAME=SHARE: a branch whose condition reads run-time value NAME (as 'upper bounds' lists "
                        "it) holds SHARE (0..1) of the time, e.g. a block-sparse mask's density (repeat)")
    a.add_argument("--device", default=None, help="catalog key (default h200), 'live', or a device .toml")
    a.add_argument("--json", action="store_true", help="print the versioned JSON result")
    a.add_argument("--plot", help="write a roofline plot (PNG) to this path")
    a.set_defaults(func=_analyze)
    r = sub.add_parser("rank", help="rank tile configurations by estimated time, without compiling")
    r.add_argument("kernel")
    r.add_argument("-p", "--param", action="append", help="fixed parameter NAME=VALUE")
    r.add_argument("--sweep", action="append", help="NAME=v1,v2,... (cartesian product over all --sweep)")
    r.add_argument("--device", default=None)
    r.add_argument("--top", type=int, default=20)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=_rank)
    d = sub.add_parser("devices", help="list the device catalog")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=_devices)
    c = sub.add_parser("cases", help="list the bundled kernel corpus")
    c.set_defaults(func=_cases)
    s = sub.add_parser("score", help="score the model against recorded GPU measurements")
    s.add_argument("--results", default=None, help="folder of recorded results (default: the device's folder "
                   "under benchmarks/results)")
    s.add_argument("--device", default=None, help="catalog key of the GPU the results were recorded on "
                   "(default: every recorded GPU, h200 and h100_sxm)")
    s.add_argument("--check", action="store_true", help="exit 1 when accuracy is below the accepted figures")
    s.set_defaults(func=_score)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        rc = args.func(args)
    except TileroofError as exc:
        print(f"tileroof: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
