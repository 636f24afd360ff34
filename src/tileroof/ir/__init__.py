"""The only package that imports TVM or TileLang: kernel in, KernelTrace out."""
from __future__ import annotations

import dataclasses
import inspect

from ..errors import TileroofError
from ..trace import KernelTrace


def _tvm():
    try:
        import tilelang  # noqa: F401  (puts TileLang's TVM on the path)
        from tilelang import tvm
    except Exception as exc:  # noqa: BLE001
        raise TileroofError(f"cannot import tilelang: {exc}") from None
    return tvm


def _plain_builder(kernel, tirx, params) -> bool:
    """A plain Python function that returns a PrimFunc (`def matmul(M, N, K, ...): ... return main`,
    the form many TileLang examples use), given its parameters."""
    if not inspect.isfunction(kernel) or hasattr(kernel, "get_tir"):
        return False
    try:
        sig = inspect.signature(kernel)
    except (TypeError, ValueError):
        return False
    required = [n for n, p in sig.parameters.items()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return bool(params) or not required


def _missing(missing: list, rest: dict) -> TileroofError:
    """The one-line error for parameters the kernel needs and was not given, naming a given one it
    does not take that is close to a missing one (a typo: -p Nx=8192 for N; a symbolic shape's
    binding, -p m=8192, is not one)."""
    import difflib

    close = sorted({r for n in missing for r in difflib.get_close_matches(n, list(rest), n=3, cutoff=0.6)})
    extra = f" (given {', '.join('-p ' + c for c in close)}, which it does not take: a typo?)" if close else ""
    return TileroofError(f"missing parameter {', '.join(missing)}: pass it with -p {missing[0]}=<value>{extra}")


def _call_builder(kernel, tirx, params):
    sig = inspect.signature(kernel)
    takes_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    call = dict(params) if takes_any else {k: v for k, v in params.items() if k in sig.parameters}
    rest = {} if takes_any else {k: v for k, v in params.items() if k not in sig.parameters}
    missing = [n for n, p in sig.parameters.items()
               if p.default is p.empty and n not in call and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        raise _missing(missing, rest)
    try:
        with _quiet_tilelang():
            func = kernel(**call)
    except TileroofError:
        raise
    except Exception as exc:  # noqa: BLE001 — the user's builder failed: one line
        msg = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
        raise TileroofError(f"{kernel.__name__}(...) failed: {msg[-1] if msg else type(exc).__name__}") from None
    if isinstance(func, tirx.PrimFunc):
        return func, rest
    prim = getattr(func, "prim_func", None)
    if isinstance(prim, tirx.PrimFunc):
        return prim, rest
    if hasattr(func, "get_tir") or isinstance(func, _tvm().IRModule):
        return to_primfunc(func, rest)
    raise TileroofError(f"{kernel.__name__}(...) returned {type(func).__name__}, not a TileLang PrimFunc")


class _quiet_tilelang:
    """TileLang logs the generated builder source at CRITICAL level when a kernel fails to
    elaborate; the user gets tileroof's one-line error instead."""

    def __enter__(self):
        import logging

        self.logger = logging.getLogger("tilelang")
        self.level = self.logger.level
        self.logger.setLevel(logging.CRITICAL + 1)

    def __exit__(self, *exc):
        self.logger.setLevel(self.level)
        return False


def _signature_params(kernel) -> set[str] | None:
    func = getattr(kernel, "func", None)
    sig = getattr(func, "signature", None)
    if sig is None:
        target = getattr(func, "orig_func", None) or func
        try:
            sig = inspect.signature(target)
        except (TypeError, ValueError):
            return None
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return set(sig.parameters)


def _label(kernel) -> str:
    k = getattr(kernel, "jit_impl", None) or kernel
    orig = getattr(getattr(k, "func", None), "orig_func", None)
    for obj in (orig, k):
        name = getattr(obj, "__name__", None)
        if isinstance(name, str):
            return name
    attrs = getattr(k, "attrs", None)
    if attrs is not None and "global_symbol" in attrs:
        return str(attrs["global_symbol"])
    return "kernel"


def to_primfunc(kernel, params: dict):
    """A PrimFunc from a PrimFunc, an IRModule, a @tilelang.jit kernel (+ params) or a compiled kernel.

    Returns (primfunc, leftover params): params the jit function does not take are kept to bind
    symbolic shapes in the TIR."""
    tvm = _tvm()
    tirx = tvm.tirx
    if isinstance(kernel, tirx.PrimFunc):
        return kernel, dict(params)
    inner = getattr(kernel, "jit_impl", None)        # @autotune(...) over @tilelang.jit
    if inner is not None and hasattr(inner, "get_tir"):
        kernel = inner
    if _plain_builder(kernel, tirx, params):
        return _call_builder(kernel, tirx, params)
    if isinstance(kernel, tvm.IRModule):
        funcs = [(gv.name_hint, f) for gv, f in kernel.functions.items() if isinstance(f, tirx.PrimFunc)]
        if not funcs:
            raise TileroofError("the IRModule holds no PrimFunc")
        named = [f for n, f in funcs if n == "main"]
        return (named[0] if named else funcs[0][1]), dict(params)
    if hasattr(kernel, "get_tir"):
        accepted = _signature_params(kernel)
        # eager-style kernels (`Q: T.Tensor(...)` in the body, shapes from T.const) take their tensor
        # arguments at call time; their shapes are bound by name (-p batch=4), which get_tir takes
        tensors = set(getattr(getattr(kernel, "func", None), "tensor_args", None) or ())
        if tensors:
            accepted = None
        call = params if accepted is None else {k: v for k, v in params.items() if k in accepted}
        rest = {} if accepted is None else {k: v for k, v in params.items() if k not in accepted}
        sig = getattr(getattr(kernel, "func", None), "signature", None)
        if sig is None and hasattr(getattr(kernel, "func", None), "orig_func"):
            sig = inspect.signature(kernel.func.orig_func)
        if sig is not None and (accepted is not None or tensors):
            missing = [n for n, p in sig.parameters.items()
                       if p.default is p.empty and n not in call and n not in tensors
                       and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if missing:
                raise _missing(missing, rest)
        try:
            with _quiet_tilelang():
                func = kernel.get_tir(**call)
        except TileroofError:
            raise
        except Exception as exc:  # noqa: BLE001 — TileLang/TVM errors become one line
            msg = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
            text = msg[0] if msg and tensors else (msg[-1] if msg else type(exc).__name__)
            raise TileroofError(f"TileLang could not elaborate the kernel: {text}") from None
        if not isinstance(func, tvm.tirx.PrimFunc):
            raise TileroofError(f"the kernel's get_tir returned {type(func).__name__}, not a PrimFunc")
        return func, rest
    prim = getattr(kernel, "prim_func", None)
    if isinstance(prim, tirx.PrimFunc):
        return prim, dict(params)
    raise TileroofError(f"not a TileLang function: {type(kernel).__name__} (expected a @tilelang.jit kernel, "
                        "a tvm.tirx.PrimFunc or an IRModule)")


def _tir_var_names(func) -> set[str]:
    """Names of the variables a PrimFunc's parameters, buffer shapes and body use (symbolic shapes
    that a leftover parameter can bind)."""
    tirx = _tvm().tirx
    names = {str(getattr(p, "name", p)) for p in func.params}

    def visit(node):
        if isinstance(node, tirx.Var):
            names.add(str(node.name))
    for buf in func.buffer_map.values():
        for dim in list(buf.shape) + list(buf.strides or []):
            tirx.stmt_functor.post_order_visit(dim, visit)
    tirx.stmt_functor.post_order_visit(func.body, visit)
    return names


def _check_run_time_names(func, values: dict | None, flag: str) -> None:
    """A --assume / --taken name that is no buffer and no variable of the kernel's TIR binds
    nothing (a typo, say): one line, never silently ignored."""
    if not values:
        return
    tirx = _tvm().tirx
    names = _tir_var_names(func)

    def visit(node):
        if isinstance(node, (tirx.BufferLoad, tirx.BufferStore)):
            names.add(str(node.buffer.name))
    tirx.stmt_functor.post_order_visit(func.body, visit)
    names |= {str(b.name) for b in func.buffer_map.values()}
    unknown = sorted(set(values) - names)
    if unknown:
        raise TileroofError(f"{flag} {', '.join(unknown)}: the kernel's TIR has no buffer or variable of that name")


def _check_leftovers(func, rest: dict) -> None:
    """A parameter the kernel does not take and no symbolic shape of its TIR is named after is a
    mistake (a typo, say): one line, never silently ignored."""
    if not rest:
        return
    unknown = sorted(set(rest) - _tir_var_names(func))
    if unknown:
        raise TileroofError(f"unknown parameter {', '.join(unknown)}: the kernel takes no such argument and its TIR "
                            "has no symbolic shape of that name")


def trace(kernel, params: dict | None = None, assume: dict | None = None, name: str | None = None,
          taken: dict | None = None) -> KernelTrace:
    """Walk a kernel once and return its neutral trace.  assume: values of run-time quantities;
    taken: run-time value name -> share (0..1) of the time a branch whose condition reads it holds."""
    params = dict(params or {})
    func, rest = to_primfunc(kernel, params)
    from .walk import Walker

    label = name or _label(kernel)
    if not func.attrs or "global_symbol" not in func.attrs:
        pass
    binding = {**params, **rest}
    _check_leftovers(func, rest)
    _check_run_time_names(func, assume, "--assume")
    _check_run_time_names(func, taken, "--taken")
    try:
        tr = Walker(func, binding, assume or {}, label, _check_taken(taken)).run()
    except TileroofError:
        raise
    except Exception as exc:  # noqa: BLE001 — never a traceback from TVM internals
        raise TileroofError(f"could not analyse the kernel's TIR ({type(exc).__name__}: {exc})") from None
    configs = _pass_configs(kernel)
    if configs:
        tr = dataclasses.replace(tr, pass_configs=configs,
                                 launches=tuple(dataclasses.replace(t, pass_configs=configs) for t in tr.launches))
    return tr


def _check_taken(taken: dict | None) -> dict:
    out = {}
    for name, share in (taken or {}).items():
        try:
            share = float(share)
        except (TypeError, ValueError):
            raise TileroofError(f"--taken {name}: the share must be a number between 0 and 1, not {share!r}") from None
        if not 0.0 <= share <= 1.0:
            raise TileroofError(f"--taken {name}={share}: the share of the time a branch holds must lie in [0, 1]")
        out[str(name)] = share
    return out


def _pass_configs(kernel) -> tuple:
    """The (key, value) pairs of a @tilelang.jit kernel's pass_configs (TIR carries none)."""
    impl = getattr(kernel, "jit_impl", kernel)
    configs = getattr(impl, "pass_configs", None) or {}
    try:
        return tuple(sorted((str(getattr(k, "value", k)), v) for k, v in dict(configs).items()))
    except (TypeError, ValueError):
        return ()
