"""The only package that imports TVM or TileLang: kernel in, KernelTrace out."""
from __future__ import annotations

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


def to_primfunc(kernel, params: dict):
    """A PrimFunc from a PrimFunc, an IRModule, a @tilelang.jit kernel (+ params) or a compiled kernel.

    Returns (primfunc, leftover params): params the jit function does not take are kept to bind
    symbolic shapes in the TIR."""
    tvm = _tvm()
    tirx = tvm.tirx
    if isinstance(kernel, tirx.PrimFunc):
        return kernel, dict(params)
    if isinstance(kernel, tvm.IRModule):
        funcs = [(gv.name_hint, f) for gv, f in kernel.functions.items() if isinstance(f, tirx.PrimFunc)]
        if not funcs:
            raise TileroofError("the IRModule holds no PrimFunc")
        named = [f for n, f in funcs if n == "main"]
        return (named[0] if named else funcs[0][1]), dict(params)
    if hasattr(kernel, "get_tir"):
        accepted = _signature_params(kernel)
        call = params if accepted is None else {k: v for k, v in params.items() if k in accepted}
        rest = {} if accepted is None else {k: v for k, v in params.items() if k not in accepted}
        if accepted is not None:
            sig = getattr(kernel.func, "signature", None) or inspect.signature(kernel.func.orig_func)
            missing = [n for n, p in sig.parameters.items()
                       if p.default is p.empty and n not in call and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if missing:
                raise TileroofError(f"missing parameter {', '.join(missing)}: pass it with -p {missing[0]}=<value>")
        try:
            func = kernel.get_tir(**call)
        except TileroofError:
            raise
        except Exception as exc:  # noqa: BLE001 — TileLang/TVM errors become one line
            msg = str(exc).strip().splitlines()
            raise TileroofError(f"TileLang could not elaborate the kernel: {msg[-1] if msg else type(exc).__name__}") from None
        return func, rest
    prim = getattr(kernel, "prim_func", None)
    if isinstance(prim, tirx.PrimFunc):
        return prim, dict(params)
    raise TileroofError(f"not a TileLang function: {type(kernel).__name__} (expected a @tilelang.jit kernel, "
                        "a tvm.tirx.PrimFunc or an IRModule)")


def trace(kernel, params: dict | None = None, assume: dict | None = None, name: str | None = None) -> KernelTrace:
    """Walk a kernel once and return its neutral trace."""
    params = dict(params or {})
    func, rest = to_primfunc(kernel, params)
    from .walk import Walker

    label = name or getattr(getattr(kernel, "func", None), "orig_func", None).__name__ \
        if hasattr(getattr(kernel, "func", None), "orig_func") else (name or "kernel")
    if not func.attrs or "global_symbol" not in func.attrs:
        pass
    binding = {**params, **rest}
    try:
        return Walker(func, binding, assume or {}, label).run()
    except TileroofError:
        raise
    except Exception as exc:  # noqa: BLE001 — never a traceback from TVM internals
        raise TileroofError(f"could not analyse the kernel's TIR ({type(exc).__name__}: {exc})") from None
