"""The kernel corpus: TileLang kernels with parameters, input makers, torch references and
hand-derived counts (see case.py).

    CASES:  dict[str, Case]          every case, sweep configs included
    SWEEPS: dict[str, list[str]]     sweep name -> names of its cases, in config order
    get(name) -> Case

Importing this package imports tilelang (to build the @tilelang.jit kernels) but not torch.
"""
from __future__ import annotations

from .case import Case, Expected
from . import attention, conv, dtypes, elementwise, extra, gemm, gemv, misc, norm, reduce, upstream
from . import up_attn, up_blind2, up_conv_fp8, up_dequant, up_gemm_variants, up_mla, up_simple

# families written and measured after the model was first designed and fitted (never fitted on:
# tileroof.score reports them as "new")
LATE_FAMILIES = (extra, upstream, up_attn, up_dequant, up_mla, up_simple, up_conv_fp8, up_gemm_variants,
                 up_blind2, dtypes)
_FAMILIES = (gemm, attention, conv, elementwise, norm, reduce, gemv, misc) + LATE_FAMILIES


def _build():
    cases: dict[str, Case] = {}
    sweeps: dict[str, list[str]] = {}

    def add(c: Case):
        if c.name in cases:
            raise ValueError(f"duplicate corpus case name {c.name!r}")
        cases[c.name] = c

    for fam in _FAMILIES:
        # data-dependent cases: work that depends on input data (counted as upper bounds)
        for c in fam.cases() + (fam.data_dependent_cases() if hasattr(fam, "data_dependent_cases") else []):
            add(c)
        # probes: kernels written to study one mechanism
        for c in (fam.probe_cases() if hasattr(fam, "probe_cases") else []):
            add(c)
    for fam in _FAMILIES:
        if hasattr(fam, "sweeps"):
            sweep_cases, names = fam.sweeps()
            for c in sweep_cases:
                add(c)
            for k, v in names.items():
                if k in sweeps:
                    raise ValueError(f"duplicate sweep name {k!r}")
                sweeps[k] = list(v)
    return cases, sweeps


CASES, SWEEPS = _build()


def get(name: str) -> Case:
    try:
        return CASES[name]
    except KeyError:
        raise KeyError(f"no corpus case {name!r}; known: {', '.join(sorted(CASES))}") from None


__all__ = ["Case", "Expected", "CASES", "SWEEPS", "LATE_FAMILIES", "get"]
