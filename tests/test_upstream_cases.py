"""The upstream-style corpus cases (tileroof.corpus.upstream): they elaborate, tileroof's counts
equal the hand derivations (Expected), the input makers agree with the PrimFunc signatures, and
the torch references run on tiny CPU shapes and agree with independent formulations (autograd,
recurrences, explicit index formulas).

For data_dependent_cases() the counts tileroof can only bound are listed in KNOWN_DISAGREEMENTS;
the test checks that every other count matches and that those are bounds at or above what runs
(so a change in tileroof shows up here as a failure to update the list).
"""
import pytest

import tileroof
from tileroof.corpus import upstream
from tileroof.corpus.upstream import tiny_params

FIELDS = ("tensor_flops", "cuda_flops", "sfu_ops", "global_read_bytes", "global_write_bytes",
          "global_atomic_bytes", "unique_bytes")

CASES = {c.name: c for c in upstream.cases()}
UNMATCHED = {c.name: c for c in upstream.data_dependent_cases()}
ALL = {**CASES, **UNMATCHED}

KNOWN_DISAGREEMENTS = {
    # the mask decides which key tiles run: tileroof counts all of them (upper bound)
    "up_blocksparse_attn_fp16_b2_h32_s8192_d128_sink1_win8": {
        "tensor_flops", "cuda_flops", "sfu_ops", "global_read_bytes"},
    # A rows clipped and C rows stored depend on the group offsets: tileroof counts whole tiles
    "up_grouped_gemm_fp16_g8_m8192_n4096_k4096": {"global_read_bytes", "global_write_bytes"},
    "up_grouped_gemm_fp16_g4_m10096_n7168_k2048": {"global_read_bytes", "global_write_bytes"},
    "up_grouped_gemm_fp16_g16_m8000_n2048_k4096": {"global_read_bytes", "global_write_bytes"},
}


def _measured(r):
    c = r.counts
    return {
        "tensor_flops": r.tensor_flops, "cuda_flops": r.cuda_flops, "sfu_ops": r.sfu_ops,
        "global_read_bytes": c.level_bytes("global", "read"),
        "global_write_bytes": c.level_bytes("global", "write"),
        "global_atomic_bytes": c.level_bytes("global", "atomic"),
        "unique_bytes": r.unique_bytes,
    }


# --------------------------------------------------------------------------- bookkeeping
def test_bookkeeping():
    assert len(CASES) >= 5
    assert not set(CASES) & set(UNMATCHED)
    assert set(KNOWN_DISAGREEMENTS) == set(UNMATCHED)
    kernels = {id(c.kernel) for c in CASES.values()}
    assert len(kernels) >= 5, "five distinct upstream kernels"
    for c in ALL.values():
        assert c.name.startswith("up_") and " " not in c.name
        assert "upstream" in c.tags
        assert "examples/" in c.note, c.name
        assert c.sweep is None and c.rtol > 0
        for f in FIELDS:
            v = getattr(c.expected, f)
            assert v is None or (type(v) is int and v >= 0), (c.name, f, v)
        assert c.expected.tensor_flops is not None
        assert c.expected.global_read_bytes is not None and c.expected.unique_bytes is not None


# --------------------------------------------------------------------------- elaboration + counts
@pytest.mark.parametrize("name", sorted(ALL))
def test_elaborates(name):
    from tileroof.ir import to_primfunc

    case = ALL[name]
    func, _ = to_primfunc(case.kernel, case.params)
    assert len(func.params) > 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_counts_match_hand_derivation(name):
    case = CASES[name]
    r = tileroof.analyze(case.kernel, device="h200", **case.params)
    got = _measured(r)
    for f in FIELDS:
        want = getattr(case.expected, f)
        if want is not None:
            assert got[f] == want, f"{name}.{f}: tileroof {got[f]} vs hand {want}"
    assert not r.partial, f"{name}: unmodelled ops {r.unmodeled}"
    assert not r.bounded, f"{name}: bounded counts {r.bounded}"
    assert r.estimated_time > 0 and r.launch_error is None


@pytest.mark.parametrize("name", sorted(UNMATCHED))
def test_unmatched_cases_disagree_only_where_known(name):
    case = UNMATCHED[name]
    r = tileroof.analyze(case.kernel, device="h200", **case.params)
    got = _measured(r)
    known = KNOWN_DISAGREEMENTS[name]
    for f in FIELDS:
        want = getattr(case.expected, f)
        if want is None:
            continue
        if f in known:
            assert got[f] != want, f"{name}.{f} now matches the hand count: update KNOWN_DISAGREEMENTS"
            if "data-dependent" in case.tags:
                assert got[f] >= want, f"{name}.{f}: a bound below the executed count"
        else:
            assert got[f] == want, f"{name}.{f}: tileroof {got[f]} vs hand {want}"
    assert not r.partial, f"{name}: unmodelled ops {r.unmodeled}"
    assert bool(r.bounded) == ("data-dependent" in case.tags), r.bounded


def test_loop_with_block_dependent_start_counts_guarded_atomics():
    """A loop from a block-dependent start with a condition on the loop variable that always
    holds (the causal backward's shape): 4 blocks run 4, 3, 2, 1 iterations of a 64 x 64 guarded
    atomic.  LoopAxis.values() once added the start without aligning it to the grid axes (7
    iterations' worth counted instead of 10)."""
    import tilelang.language as T

    S, bM, D = 256, 64, 64

    @T.prim_func
    def main(X: T.Tensor((S, D), "float32")):
        with T.Kernel(S // bM, threads=128) as by:
            acc = T.alloc_fragment([bM, D], "float32")
            T.clear(acc)
            for k in T.Pipelined(by, S // bM, num_stages=2):
                for i, j in T.Parallel(bM, D):
                    if k * bM + i < S:
                        T.atomic_add(X[k * bM + i, j], acc[i, j])

    r = tileroof.analyze(main)
    (op,) = [o for o in r.trace.ops if o.kind.startswith("atomic")]
    assert op.executions == (4 + 3 + 2 + 1) * bM * D


# --------------------------------------------------------------------------- inputs + references
# (shapes, dtypes and the references' running on tiny CPU shapes are checked for every corpus case,
# these included, by tests/test_corpus_elaborates.py)
@pytest.mark.parametrize("name", sorted(ALL))
def test_outputs_start_poisoned_and_atomic_targets_zeroed(name):
    torch = pytest.importorskip("torch")
    case = ALL[name]
    args = case.make_inputs(tiny_params(case), "cpu")
    ref = case.reference(args)
    for idx, t in ref.items():
        assert bool(torch.isfinite(t.double()).all()), (name, idx)
        a = args[idx]
        if a.dtype.is_floating_point and "atomic" not in case.tags:
            assert bool(torch.isnan(a.float()).all()), (name, idx)     # outputs start poisoned
    if "atomic" in case.tags:
        assert bool((args[6] == 0).all()), "dQ must start at zero"


def _tiny_case_args(name):
    case = ALL[name]
    tiny = tiny_params(case)
    return case, tiny, case.make_inputs(tiny, "cpu")


def test_dq_layout_matches_upstream_formula():
    torch = pytest.importorskip("torch")
    B, H, S, D = 1, 2, 16, 16
    x = torch.arange(B * H * S * D, dtype=torch.float32).reshape(B, H, S, D)
    stored = upstream.dq_to_layout(x)
    flat = stored.reshape(-1)
    phys = (B, H, S // 8, D // 8, 2, 32)
    for b in range(B):
        for h in range(H):
            for l in range(S):
                for d in range(D):
                    idx = (b, h, l // 8, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2)
                    lin = 0
                    for n, i in zip(phys, idx):
                        lin = lin * n + i
                    assert flat[lin] == x[b, h, l, d]
    assert torch.equal(upstream.dq_from_layout(stored), x)


@pytest.mark.parametrize("causal", [False, True])
def test_bwd_reference_and_inputs_against_autograd(causal):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    name = "up_mha_bwd_causal_fp16_b2_h16_s4096_d64" if causal else "up_mha_bwd_fp16_b2_h16_s2048_d64"
    case, tiny, args = _tiny_case_args(name)
    q, k, v, do = (a.float().requires_grad_() for a in args[:4])
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    o.backward(do.detach())
    ref = case.reference(args)
    assert torch.allclose(upstream.dq_from_layout(ref[6]), q.grad, atol=1e-4, rtol=1e-4)
    assert torch.allclose(ref[7], k.grad, atol=1e-4, rtol=1e-4)
    assert torch.allclose(ref[8], v.grad, atol=1e-4, rtol=1e-4)
    # lse is log2(sum exp2(s * log2(e) / sqrt(d))); Delta = rowsum(fp16(O) * dO)
    s = q.detach() @ k.detach().transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        s = s.masked_fill(~torch.ones_like(s, dtype=torch.bool).tril(), float("-inf"))
    lse2 = torch.log2(torch.exp2(s * upstream.LOG2E).sum(-1))
    assert torch.allclose(args[4], lse2, atol=1e-3)
    delta = (o.detach().half().float() * do.detach()).sum(-1)
    assert torch.allclose(args[5], delta, atol=2e-2, rtol=1e-2)


def test_decode_reference_against_loop():
    torch = pytest.importorskip("torch")
    case, tiny, args = _tiny_case_args("up_gqa_decode_split16_fp16_b16_h32_g8_s8192_d128")
    out = case.reference(args)[6]
    q, k, v, mask = args[0].float(), args[1].float(), args[2].float(), args[3]
    B, H, D = q.shape
    G = k.shape[2]
    for b in range(B):
        for h in range(H):
            kv = h // (H // G)
            keep = mask[b, :, kv] != 0
            s = (k[b, keep, kv] @ q[b, h]) / D ** 0.5
            want = torch.softmax(s, 0) @ v[b, keep, kv]
            assert torch.allclose(out[b, h], want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("retention", [False, True])
def test_chunked_references_against_recurrence(retention):
    torch = pytest.importorskip("torch")
    name = ("up_retention_fwd_bf16_b4_s4096_h32_d128" if retention
            else "up_linear_attn_fwd_fp16_b4_s4096_h16_d128")
    case, tiny, args = _tiny_case_args(name)
    ref = case.reference(args)
    q, k, v = args[0].double(), args[1].double(), args[2].double()
    B, S, H, DK = q.shape
    BK = tiny["BK"]
    scale = DK ** -0.5
    for b in range(B):
        for h in range(H):
            gamma = 1.0 - 2.0 ** (-5.0 - h) if retention else 1.0
            for ik in range(DK // BK):
                sl = slice(ik * BK, (ik + 1) * BK)
                state = torch.zeros(BK, v.shape[-1], dtype=torch.float64)
                for t in range(S):                     # recurrent form of the same output
                    state = gamma * state + torch.outer(k[b, t, h, sl], v[b, t, h])
                    want = (q[b, t, h, sl] * scale) @ state
                    got = ref[3][ik, b, t, h].double()
                    assert torch.allclose(got, want, atol=1e-3, rtol=1e-3), (b, h, ik, t)
            if not retention:
                full = k[b, :, h].T @ v[b, :, h]
                assert torch.allclose(ref[4][b, h].double(), full, atol=1e-3, rtol=1e-4)


def test_topk_inputs_have_no_ties_and_reference_is_topk():
    torch = pytest.importorskip("torch")
    case, tiny, args = _tiny_case_args("up_topk_fp32_m262144_n128_k6")
    logits = args[0]
    assert all(len(set(row.tolist())) == logits.shape[1] for row in logits)
    ref = case.reference(args)
    k = tiny["topk"]
    order = torch.argsort(logits, dim=1, descending=True)[:, :k].to(torch.int32)
    assert torch.equal(ref[2], order)
    assert torch.equal(ref[1], torch.gather(logits, 1, order.long()))


def test_blocksparse_reference_against_dense_mask():
    torch = pytest.importorskip("torch")
    case, tiny, args = _tiny_case_args("up_blocksparse_attn_fp16_b2_h32_s8192_d128_sink1_win8")
    q, k, v, mask = args[0].float(), args[1].float(), args[2].float(), args[3]
    S, nb = q.shape[2], mask.shape[-1]
    blk = S // nb
    rows = torch.arange(S)
    allowed = mask[0, 0][rows[:, None] // blk, rows[None, :] // blk] & (rows[:, None] >= rows[None, :])
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    want = torch.softmax(s.masked_fill(~allowed, float("-inf")), -1) @ v
    assert torch.allclose(case.reference(args)[4], want, atol=1e-4, rtol=1e-4)
    # the fixed pattern: first tile + window, every row has its diagonal
    assert bool(mask[..., 0].all()) and bool(torch.diagonal(mask, dim1=-2, dim2=-1).all())


def test_grouped_gemm_offsets_follow_upstream():
    torch = pytest.importorskip("torch")
    case, tiny, args = _tiny_case_args("up_grouped_gemm_fp16_g8_m8192_n4096_k4096")
    sizes = list(tiny["batch_sizes_list"])
    offs, padded = args[4].tolist(), args[5].tolist()
    assert offs == [0, 100, 137] and padded == [0, 128, 192]       # ceil((s + 1) / 64) * 64
    ref = case.reference(args)[2]
    a, b = args[0].float(), args[1].float()
    for g, (o, s) in enumerate(zip(offs, sizes)):
        assert torch.allclose(ref[o:o + s], a[o:o + s] @ b[g], atol=1e-3, rtol=1e-4)


def test_grouped_gemm_tiles_are_data_keyed():
    """The grouped GEMM's A rows and B group are read from the offsets tables but are one value per
    block (they depend on bx only): the L2 model keys them by bx spread evenly over the tile
    positions.  Tiny case: sizes (100, 37, 64), block_M 64 -> grid 4 + 3 = 7 row tiles; B has 3
    groups (positions 0..2): floor(bx * 3 / 7) = 0 0 0 1 1 2 2; A has 201 rows, ceil(201/64) = 4
    positions of 64 rows: floor(bx * 4 / 7) * 64 = 0 0 64 64 128 128 192, the last kept inside
    the buffer at 201 - 64 = 137."""
    import numpy as np

    case = ALL["up_grouped_gemm_fp16_g8_m8192_n4096_k4096"]
    r = tileroof.analyze(case.kernel, **tiny_params(case))
    assert r.trace.data_keyed == ("A", "B")
    assert any("A, B start at values read from a tensor" in a for a in r.timing.assumptions)
    assert r.trace.grid[:2] == (7, 2)
    starts = {}
    for op in r.trace.ops:
        for o in op.operands:
            if o.scope == "global" and o.block_start is not None:
                starts[o.buffer] = o.block_start
    dim0 = lambda k: np.broadcast_to(np.asarray(k[0]), (1, 1, 7)).reshape(-1).tolist()
    assert dim0(starts["B"]) == [0, 0, 0, 1, 1, 2, 2]
    assert dim0(starts["A"]) == [0, 0, 64, 64, 128, 128, 137]
    # the block-sparse kernel's key tiles come from a mask read per loop iteration: not keyed
    bs = ALL["up_blocksparse_attn_fp16_b2_h32_s8192_d128_sink1_win8"]
    assert tileroof.analyze(bs.kernel, **tiny_params(bs)).trace.data_keyed == ()


def test_blocksparse_probes_told_their_density():
    """The block-sparse probes carry their mask's density (Case.taken, what --taken says): counted
    at it, tileroof's FLOPs and K/V reads come within 0.1 % of the hand counts of the tiles the
    mask keeps (the share spreads each block's work evenly over its trips), none bounded; the
    densities follow from the mask rows."""
    probes = [c for c in upstream.probe_cases() if c.name.startswith("probe_bsparse")]
    assert len(probes) == 6
    for c in probes:
        share = c.taken["block_mask"]
        assert share == pytest.approx(upstream.blocksparse_share(c.params, int(c.name.split("_win")[1].split("_")[0])))
        r = tileroof.analyze(c.kernel, taken=c.taken, **c.params)
        got = _measured(r)
        for f in ("tensor_flops", "cuda_flops", "sfu_ops", "global_read_bytes"):
            assert got[f] == pytest.approx(getattr(c.expected, f), rel=1e-3), (c.name, f)
        assert not r.bounded
    assert max(c.taken["block_mask"] for c in probes) == 1.0
