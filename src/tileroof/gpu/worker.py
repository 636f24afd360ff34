"""The GPU side of `measure`, run in a child process so that a kernel which breaks the CUDA context
(illegal address, ...) costs one case, not the run.  Two modes:

- "measure": compile the cases in parallel, then for each: make inputs, reference, run once, compare
  (||out - ref||_F / ||ref||_F in float64), time (events with L2 flush; CUDA graph when short).
- "profile": compile (tilelang's disk cache makes this fast), then launch each case exactly once
  between cudaProfilerStart/Stop inside an NVTX range named after the case (the parent runs this
  mode under Nsight Compute).

Every finding is one JSON line on --results, flushed at once, so the parent can read what a worker
did even when it died.  Exit code 3 means the CUDA context broke and the parent should restart a
worker for the remaining cases."""
from __future__ import annotations

import concurrent.futures as cf
import functools
import logging
import os
import re
import sys
import threading
import time
import traceback

from .records import JsonLines
from .timing import rotation_sets, time_events, time_graph

EXIT_CUDA_BROKEN = 3
GRAPH_BELOW_S = 20e-6
_FATAL = ("illegal memory access", "illegal instruction", "misaligned address", "unspecified launch failure",
          "device-side assert", "launch failure", "uncorrectable", "ILLEGAL_ADDRESS", "launch timed out",
          "CUDA error: an illegal", "context is destroyed", "cudaErrorLaunchFailure")
_GLOBAL_FN = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(")


def fmt_exc(e: BaseException, limit: int = 3000) -> str:
    """'Type: message', long messages cut in the middle (a compiler error puts the source first and
    the diagnostics last)."""
    text = f"{type(e).__name__}: {e}"
    if len(text) <= limit:
        return text
    head = limit // 6
    return text[:head] + "\n[...]\n" + text[-(limit - head - 7):]


def looks_fatal(e: BaseException) -> bool:
    msg = str(e)
    return any(s.lower() in msg.lower() for s in _FATAL)


def cuda_alive() -> bool:
    import torch
    try:
        torch.cuda.synchronize()
        x = torch.ones(4, device="cuda") + 1
        return float(x.sum().item()) == 8.0
    except Exception:  # noqa: BLE001
        return False


def kernel_names(kernel) -> list[str]:
    try:
        src = kernel.get_kernel_source()
    except Exception:  # noqa: BLE001
        return []
    return sorted(set(_GLOBAL_FN.findall(src or "")))


# ---------------------------------------------------------------- compile
def _compile_one(impl, prim_func):
    import tilelang
    t = time.time()
    try:
        k = tilelang.compile(
            prim_func,
            out_idx=getattr(impl, "out_idx", None),
            execution_backend=getattr(impl, "execution_backend", None),
            target=getattr(impl, "target", None),
            target_host=getattr(impl, "target_host", None),
            verbose=getattr(impl, "verbose", None),
            pass_configs=getattr(impl, "pass_configs", None),
            compile_flags=getattr(impl, "compile_flags", None),
        )
        return k, time.time() - t, None
    except Exception as e:  # noqa: BLE001
        return None, time.time() - t, fmt_exc(e)


def _elaborate(cases, out):
    """get_tir for each case in this thread (elaboration is not known to be thread-safe)."""
    funcs = {}
    for c in cases:
        t = time.time()
        try:
            funcs[c.name] = c.kernel.get_tir(**c.params)
        except Exception as e:  # noqa: BLE001
            out.emit({"type": "compile", "case": c.name, "ok": False, "seconds": time.time() - t,
                      "stage": "elaborate", "error": fmt_exc(e)})
    return funcs


def compile_pool(cases, jobs, deadline, out):
    """Elaborate serially, then compile every case in one thread pool of `jobs` workers (what
    tilelang's par_compile does inside, but over all kernel functions at once, with a per-case
    time and error).  Returns ({name: kernel}, timed_out)."""
    funcs = _elaborate(cases, out)
    kernels = {}
    ex = cf.ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="tr-compile")
    futs = {ex.submit(_compile_one, c.kernel, funcs[c.name]): c.name for c in cases if c.name in funcs}
    timeout = None if deadline is None else max(1.0, deadline - time.time())
    try:
        for f in cf.as_completed(futs, timeout=timeout):
            name = futs[f]
            k, secs, err = f.result()
            rec = {"type": "compile", "case": name, "ok": k is not None, "seconds": secs,
                   "stage": "compile", "error": err, "mode": "pool"}
            if k is not None:
                kernels[name] = k
                rec["kernel_names"] = kernel_names(k)
            out.emit(rec)
    except cf.TimeoutError:
        for f, name in futs.items():
            if not f.done():
                out.emit({"type": "compile", "case": name, "ok": False, "seconds": None,
                          "stage": "compile", "error": "skipped: time budget ran out while compiling"})
        ex.shutdown(wait=False, cancel_futures=True)
        return kernels, True
    ex.shutdown(wait=True)
    return kernels, False


class _Capture(logging.Handler):
    """Collects the warnings par_compile logs for configs it could not compile."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        if record.thread == threading.get_ident():
            self.messages.append(record.getMessage())


def compile_par(cases, jobs, out):
    """The kernel function's own `.par_compile(configs, num_workers, ignore_error=True)`, one call
    per kernel function (cases sharing a function compile together).  Seconds are the group's
    wall time."""
    funcs = _elaborate(cases, out)
    groups: dict[int, list] = {}
    for c in cases:
        if c.name in funcs:
            groups.setdefault(id(c.kernel), []).append(c)
    kernels = {}
    log = logging.getLogger("tilelang.jit")
    for group in groups.values():
        impl = group[0].kernel
        cap = _Capture()
        log.addHandler(cap)
        t = time.time()
        try:
            ks = impl.par_compile([c.params for c in group], num_workers=min(jobs, len(group)),
                                  ignore_error=True)
            group_err = None
        except Exception as e:  # noqa: BLE001
            ks, group_err = [None] * len(group), fmt_exc(e)
        finally:
            log.removeHandler(cap)
        secs = time.time() - t
        errs = {}
        for msg in cap.messages:
            m = re.search(r"index (\d+): (.*)", msg, re.S)
            if m:
                errs[int(m.group(1))] = m.group(2)[-3000:]
        for i, (c, k) in enumerate(zip(group, ks)):
            rec = {"type": "compile", "case": c.name, "ok": k is not None, "seconds": secs,
                   "seconds_is_group_wall": True, "group_size": len(group), "stage": "compile",
                   "mode": "par_compile"}
            if k is None:
                rec["error"] = group_err or errs.get(i) or "par_compile returned None (see worker log)"
            else:
                kernels[c.name] = k
                rec["kernel_names"] = kernel_names(k)
            out.emit(rec)
    return kernels, False


# ---------------------------------------------------------------- correctness
def rel_error(out, ref) -> tuple[float | None, bool]:
    """(||out - ref||_F / ||ref||_F in float64 (the absolute norm when ||ref|| = 0), out has a
    non-finite value)."""
    import torch
    o = out.detach().to(torch.float64)
    r = ref.detach().to(device=o.device, dtype=torch.float64) if torch.is_tensor(ref) else \
        torch.as_tensor(ref, dtype=torch.float64, device=o.device)
    if o.shape != r.shape:
        if o.numel() != r.numel():
            raise ValueError(f"output shape {tuple(o.shape)} vs reference {tuple(r.shape)}")
        r = r.reshape(o.shape)
    nonfinite = not bool(torch.isfinite(o).all())
    diff = float(torch.linalg.vector_norm((o - r).flatten()))
    den = float(torch.linalg.vector_norm(r.flatten()))
    rel = diff / den if den > 0 else diff
    return (rel if rel == rel else None), nonfinite


def check(case, kernel, args) -> dict:
    """Reference first (from the inputs as made), then one run, then compare every output."""
    import torch
    ref = case.reference(args)
    ref = {int(i): (r.detach().clone() if torch.is_tensor(r) else r) for i, r in ref.items()}
    poisoned = {}
    for i in ref:
        a = args[i]
        if torch.is_tensor(a) and a.is_floating_point():
            poisoned[i] = bool(torch.isnan(a).all())
    torch.cuda.synchronize()
    kernel(*args)
    torch.cuda.synchronize()
    rel, nonfinite = {}, {}
    for i, r in ref.items():
        rel[i], nonfinite[i] = rel_error(args[i], r)
    ok = bool(ref) and all(rel[i] is not None and rel[i] <= case.rtol and not nonfinite[i] for i in ref)
    return {"ok": ok, "rel_err": rel, "rtol": case.rtol, "nonfinite": nonfinite,
            "outputs_poisoned_before_run": poisoned, "error": None if ref else "reference returned nothing"}


def timing(case, kernel, args, dev, l2_bytes, target_s, graph) -> dict:
    import torch
    ev = time_events(lambda: kernel(*args), target_s=target_s)
    rec = {k: ev[k] for k in ("median_s", "p10_s", "p90_s", "n", "method")}
    rec.update(primary="events", events=ev, graph=None)
    if graph and ev["median_s"] is not None and ev["median_s"] < GRAPH_BELOW_S:
        try:
            nbytes = sum(a.numel() * a.element_size() for a in args if torch.is_tensor(a))
            n_sets = rotation_sets(nbytes, l2_bytes)
            sets = [args] + [case.make_inputs(case.params, dev) for _ in range(n_sets - 1)]
            gr = time_graph([functools.partial(kernel, *s) for s in sets])
            gr["bytes_per_set"] = nbytes
            gr["sets_exceed_3x_l2"] = nbytes * n_sets >= 3 * l2_bytes
            rec["graph"] = gr
            rec.update({k: gr[k] for k in ("median_s", "p10_s", "p90_s", "n", "method")})
            rec["primary"] = "graph"
            del sets
        except Exception as e:  # noqa: BLE001
            rec["graph_error"] = fmt_exc(e)
            if looks_fatal(e):
                raise
    return rec


# ---------------------------------------------------------------- modes
def _info(out):
    from .provenance import package_version, torch_info
    info = torch_info(True)
    info.update(type="info", tilelang=package_version("tilelang", import_it=True),
                triton=package_version("triton", import_it=True))
    out.emit(info)
    return info


def _profiler(on: bool):
    import torch
    try:
        (torch.cuda.profiler.start if on else torch.cuda.profiler.stop)()
    except Exception:  # noqa: BLE001
        import cupy
        (cupy.cuda.runtime.profilerStart if on else cupy.cuda.runtime.profilerStop)()


def run(mode, names, results, jobs=16, deadline=None, compile_mode="pool", graph=True,
        target_s=0.25, time_all=False) -> int:
    import torch
    from tileroof.corpus import CASES
    out = JsonLines(results)
    info = _info(out)
    l2 = info.get("l2_cache_bytes") or (60 << 20)
    cases = [CASES[n] for n in names]
    if compile_mode == "par":
        kernels, timed_out = compile_par(cases, jobs, out)
    else:
        kernels, timed_out = compile_pool(cases, jobs, deadline if mode == "measure" else None, out)
    dev = torch.device("cuda")
    if mode == "measure":
        try:
            from .microbench import warm_gpu
            warm_gpu(0.5)                     # clocks up from idle before the first timed case
        except Exception:  # noqa: BLE001
            pass
    rc = 0
    for c in cases:
        k = kernels.get(c.name)
        if k is None:
            continue
        if deadline is not None and time.time() > deadline:
            out.emit({"type": "skipped", "case": c.name, "reason": "time budget"})
            continue
        out.emit({"type": "start", "case": c.name, "t": time.time()})
        args = None
        try:
            args = c.make_inputs(c.params, dev)
            if mode == "profile":
                k(*args)                      # warm-up, outside the profiled region
                torch.cuda.synchronize()
                out.emit({"type": "launched", "case": c.name, "t": time.time()})
                _profiler(True)
                torch.cuda.nvtx.range_push(c.name)
                try:
                    k(*args)
                    torch.cuda.synchronize()
                finally:
                    torch.cuda.nvtx.range_pop()
                    _profiler(False)
                out.emit({"type": "result", "case": c.name, "t": time.time()})
            else:
                cor = check(c, k, args)
                tim = timing(c, k, args, dev, l2, target_s, graph) if (cor["ok"] or time_all) else None
                out.emit({"type": "result", "case": c.name, "correct": cor, "time": tim})
        except Exception as e:  # noqa: BLE001
            fatal = looks_fatal(e) or not cuda_alive()
            out.emit({"type": "result", "case": c.name, "error": fmt_exc(e), "fatal": fatal,
                      "traceback": traceback.format_exc()[-3000:],
                      "correct": {"ok": False, "rel_err": {}, "error": fmt_exc(e)}})
            if fatal:
                rc = EXIT_CUDA_BROKEN
                break
        finally:
            del args
            if rc == 0:
                torch.cuda.empty_cache()
    out.emit({"type": "done", "rc": rc, "compile_timed_out": timed_out})
    out.close()
    if timed_out:      # compile threads still running: do not wait for them at interpreter exit
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc
