"""Run-to-run reproducibility of `tileroof calibrate`: compare two profiles measured on the GPU.

    python benchmarks/compare_calibrations.py A.toml B.toml

Prints each measured quantity in both runs and their relative difference, and exits 1 when any
quantity measured with the same method differs by more than 5 %.
"""
import re
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def main(argv=None) -> int:
    a_path, b_path = (argv or sys.argv[1:])[:2]
    with open(a_path, "rb") as f:
        a = tomllib.load(f)
    with open(b_path, "rb") as f:
        b = tomllib.load(f)
    worst = 0.0
    print(f"{'quantity':36s} {'run A':>12s} {'run B':>12s} {'diff':>7s}  same method")
    for key, ea in a.get("measured", {}).items():
        eb = b.get("measured", {}).get(key)
        if not eb:
            continue
        # the same procedure, whatever counts it recorded (e.g. how many warm-up runs it took)
        same = re.sub(r"[\d.]+", "#", ea.get("method", "")) == re.sub(r"[\d.]+", "#", eb.get("method", ""))
        diff = abs(eb["value"] - ea["value"]) / ea["value"] if ea["value"] else 0.0
        if same:
            worst = max(worst, diff)
        print(f"{key:36s} {ea['value']:12.2f} {eb['value']:12.2f} {diff:7.2%}  {same}")
    print(f"largest difference between runs of the same method: {worst:.2%} (limit 5 %)")
    return 0 if worst <= 0.05 else 1


if __name__ == "__main__":
    raise SystemExit(main())
