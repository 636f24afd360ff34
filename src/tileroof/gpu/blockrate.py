"""How many blocks can an SM start and retire per second?  A launch of many small blocks (a
32x32 transpose, an fp8 cast of 1024 elements a block) may be limited neither by DRAM nor by its
blocks' chains but by how fast the SMs take in new blocks: three record launches with 65 k-131 k
blocks all ran at ~180 ns a block on each SM (up_cast_fp8 128 threads, the padded fp16 transpose
256 threads), whatever their bytes.  This probe measures that rate directly.

Kernel `block_touch(G, threads, per_thread)`: a 1-D grid of G blocks; each thread copies
`per_thread` fp16 elements from A to B (coalesced, 2 bytes a lane, the transpose's access size), or
with per_thread 0 stores one constant element.  For each (threads, per_thread) the kernel time
(L2 flushed before each run, CUDA events) is taken at G = 132 x {8, 32, 128, 512} (the SM count
scales them on other GPUs); the slope of time against G, times the SM count, is the interval
between two block starts on one SM in the steady state, its intercept the launch and the first
wave.  The resident blocks per SM follow from the threads (2048 threads and 32 blocks an SM at
most, on Hopper), so the interval's change with threads says whether the cost is per block or per
warp, and the per_thread series whether the blocks' own memory time adds to it.

With `--mode bounce` the kernel is `block_bounce`: each thread stores its elements to a shared
buffer, the block synchronises, and each thread reads back another warp's elements (the mirror
index) and writes them to B: the global traffic of `block_touch` plus a transpose's shared phase and
barrier, so the difference between the two series is what that phase adds to a block's life.

With `--mode rows` the kernel is `block_tiles` (place "rows"): blocks of 32 x 8 threads each copy a 32 x 32 fp16
tile of a row-major matrix of `cols` columns (four rows a thread, 64 bytes a warp and row), the
thread transposes' global traffic without their shared phase: against `block_touch` (the same
blocks and bytes, contiguous) it says what the 32 row segments, 2 x cols bytes apart, add to a
block's life; the pitch 16384 (a power of two) against 16448 whether DRAM channels camp.

With `--mode scatter` (`block_tiles`, place "scatter") the blocks copy the 32 x 32 tiles of an 8192 x 16384 fp16
matrix in row-major tile order, each to the transposed tile position of a 16384 x 8192 one (its
content not transposed): the reads as in rows mode, the writes placed as a transpose places them
(consecutive blocks write 32 rows 32 rows apart; the other half of each 128-byte line is written
512 blocks later), in fp16 and, as the control with whole lines, fp32 (each row of a tile 128
bytes); each record row names its element_bytes (a record without them is fp16).

With `--mode pair` (`block_tiles`, place "pair") G = SMs x 512 blocks read the 32 x 32 fp16 tiles of a 16384-column
matrix in order (as rows mode) and write them to a permutation in which the two tiles that share
each 128-byte line of B (tile columns 2k and 2k + 1) come from blocks D launches apart, for D in
PAIR_DISTANCES: how late a line's second half may come before the half-line writes cost DRAM time
(the "threads" column of its record holds D; one G, no slope).

With `--mode widths` the fp16 scatter runs at one G = SMs x 512 for A widths SCATTER_WIDTHS (the
same elements): the blocks resident at once (8 an SM) cover 8 x SMs / (width / 32) tile rows of
A, so each row of B gets runs of that many 64-byte segments written together (4096 columns: 8,
512 bytes; 32768: 1, 64 bytes): how DRAM writes cost by the contiguous bytes a wave writes into
each row (256 columns: 132 segments, 8448 bytes; 32 columns: 67584 bytes); and the same for reads (place "gather": the
tiles read from their transposed positions and written in place; each record row names its place,
a record without them is scatter).  The first row of the record (place "rows", 16384 columns, the
same G and bytes, whole lines in long runs) is the contiguous reference the others are priced
against (merge_calibration: the DRAM time per byte over a stream's, by run length).

With `--mode pieces` the same for blocks whose row pieces are 64 (fp16 tiles 32 wide), 128, 256
and 512 bytes (fp32 tiles 32 x 32 `wide`, wide 1 / 2 / 4; SMs x 512 / wide blocks): A widths of 1,
4, 16, 64, 256 and 1024 tiles a row, so the wave covers 1056 ... 1 rows of tiles (on 132 SMs) and
writes runs of that many pieces into each row; each piece with its own contiguous reference.  Does
what a short run costs depend on the run alone, or on how many bytes of a row one block moves?

    python -m tileroof.gpu.blockrate --out DIR [--mode bounce | rows | scatter | pair | widths | pieces]
"""

import argparse
import time
from pathlib import Path

import tilelang
import tilelang.language as T

THREADS = (32, 64, 128, 256, 512, 1024)
PER_THREAD = (0, 1, 2, 4, 8)
WAVE_MULTIPLES = (8, 32, 128, 512)      # G = SMs x this


@tilelang.jit
def block_touch(G, threads, per_thread, dtype="float16"):
    """G blocks of `threads` threads; each thread copies per_thread elements (0: stores one)."""
    k = max(per_thread, 1)
    n = G * threads * k

    if per_thread == 0:
        @T.prim_func
        def store(B: T.Tensor((n,), dtype)):
            with T.Kernel(G, threads=threads) as bx:
                tx = T.get_thread_binding(0)
                B[bx * threads + tx] = T.cast(1, dtype)

        return store

    @T.prim_func
    def copy(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(G, threads=threads) as bx:
            tx = T.get_thread_binding(0)
            for i in T.serial(per_thread):
                B[bx * threads * k + i * threads + tx] = A[bx * threads * k + i * threads + tx]

    return copy


BOUNCE_THREADS = (128, 256, 512, 1024)
BOUNCE_PER_THREAD = (1, 4)


@tilelang.jit
def block_bounce(G, threads, per_thread, dtype="float16"):
    """G blocks of `threads` threads; each thread stores per_thread elements to shared, the block
    syncs, and each thread copies the mirror thread's elements from shared to B (B == flip of A
    within each block's per_thread x threads chunk, along the thread axis)."""
    n = G * threads * per_thread

    @T.prim_func
    def bounce(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(G, threads=threads) as bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((per_thread * threads,), dtype)
            for i in T.serial(per_thread):
                S[i * threads + tx] = A[bx * threads * per_thread + i * threads + tx]
            for i in T.serial(per_thread):
                B[bx * threads * per_thread + i * threads + tx] = S[i * threads + threads - 1 - tx]

    return bounce


ROWS_PITCHES = (16384, 16448)      # the "threads" column of a rows-mode record holds the pitch
SCATTER_SHAPE = (8192, 16384)
SCATTER_ELEMENT_BYTES = (2, 4)
SCATTER_DTYPES = {2: "float16", 4: "float32"}
PAIR_DISTANCES = (1, 4, 16, 64, 256, 1024)
SCATTER_WIDTHS = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
WIDTHS_PIECES = (("float16", 1),)
# --mode pieces: each block's row piece 64 (fp16 x 32), 128, 256, 512 bytes (fp32 x 32 wide)
PIECES = (("float16", 1), ("float32", 1), ("float32", 2), ("float32", 4))
PAIR_COLS = 16384


@tilelang.jit
def block_tiles(G, cols, place="rows", D=1, dtype="float16", wide=1):
    """G blocks of 32 x 8 threads; block b copies tile (b // T, b % T) of a row-major matrix A of
    `cols` columns (tiles of 32 rows x 32 `wide` columns, T = cols / (32 wide) tiles a row of
    tiles), row ty + 8 j of the tile by thread row ty, j < 4, columns tx + 32 i, i < wide, to B at
      - "rows": the same tile of a B shaped like A (A has 32 G / T rows);
      - "scatter": tile (b % T, b // T) of B (32 T x E / (32 T)), A being R x cols with R x cols = E =
        8192 x 16384 (the tile moved to its transposed position in the grid of tiles, its content not
        transposed; with square tiles B is cols x R);
      - "pair": tile w(b) = (b // 2D) 2D + 2 (b % D) + (b // D) % 2 of a B shaped like A: blocks b
        and b + D (b // D even) write the two halves of the same 128-byte fp16 lines;
      - "gather": scatter's mirror: block b reads tile (b % T, b // T) of A (32 T x E / (32 T)) and
        writes tile (b // T, b % T) of B (R x cols): the reads spread over many rows, the writes in place."""
    tw = 32 * wide
    tiles = cols // tw
    spread = place in ("scatter", "gather")
    R = SCATTER_SHAPE[0] * SCATTER_SHAPE[1] // cols if spread else 32 * (G // tiles)
    moved = (32 * tiles, R * cols // (32 * tiles))
    in_shape = moved if place == "gather" else (R, cols)
    out_shape = moved if place == "scatter" else (R, cols)

    @T.prim_func
    def tile_copy(A: T.Tensor(in_shape, dtype), B: T.Tensor(out_shape, dtype)):
        with T.Kernel(G, threads=[32, 8]) as bx:
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            w = (bx // (2 * D)) * (2 * D) + 2 * (bx % D) + (bx // D) % 2 if place == "pair" else bx
            row_major = ((bx // tiles) * 32, (bx % tiles) * tw)
            transposed = ((bx % tiles) * 32, (bx // tiles) * tw)
            src_r, src_c = transposed if place == "gather" else row_major
            dst_r, dst_c = transposed if place == "scatter" else ((w // tiles) * 32, (w % tiles) * tw)
            for j in T.serial(4):
                for i in T.serial(wide):
                    B[dst_r + ty + j * 8, dst_c + tx + 32 * i] = A[src_r + ty + j * 8, src_c + tx + 32 * i]

    return tile_copy


def _tiles(x, tw: int = 32):
    """A matrix's 32 x tw tiles, indexed [tile row, tile column]."""
    r, c = x.shape
    return x.view(r // 32, 32, c // tw, tw).permute(0, 2, 1, 3)


def tiles_copied(A, B, place: str, G: int, D: int = 1, wide: int = 1) -> bool:
    """Whether block_tiles(G, place, D, wide) copied A's tiles where it should: B's tile w(b) (pair),
    its transposed tile position (scatter) or its row-major one (rows, gather) holds A's tile b,
    read from A's row-major (rows, scatter, pair) or transposed (gather) tile position."""
    import torch
    tw = 32 * wide
    a_t = (_tiles(A, tw).transpose(0, 1) if place == "gather" else _tiles(A, tw)).reshape(-1, 32, tw)[:G]
    b_t = (_tiles(B, tw).transpose(0, 1) if place == "scatter" else _tiles(B, tw)).reshape(-1, 32, tw)
    slots = torch.as_tensor(pair_slots(G, D), device=B.device) if place == "pair" else slice(0, G)
    return bool(torch.equal(b_t[slots], a_t))


def pair_slots(G: int, D: int):
    """w(b) for every block (block_tiles' "pair" write permutation)."""
    import numpy as np
    b = np.arange(G)
    return (b // (2 * D)) * (2 * D) + 2 * (b % D) + (b // D) % 2


def fit_rows(times: dict, sms: int) -> list:
    """Per (threads, per_thread): the least-squares line of kernel time against G; the slope times
    the SM count is one SM's interval between block starts.  times: {(threads, per_thread, G):
    seconds}."""
    import numpy as np
    rows = []
    for t in sorted({k[0] for k in times}):
        for k in sorted({k[1] for k in times}):
            pts = sorted((g, s) for (tt, kk, g), s in times.items() if tt == t and kk == k)
            if len(pts) < 3:
                continue
            g, s = np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)
            slope, icpt = np.polyfit(g, s, 1)
            # the two largest grids alone (the steady state, far from the first wave)
            last = (s[-1] - s[-2]) / (g[-1] - g[-2])
            rows.append({"threads": t, "per_thread": k, "resident_per_sm": min(32, 2048 // t),
                         "bytes_per_block": 2 * t * max(k, 1) * (2 if k else 1),
                         "points": [[int(a), float(b)] for a, b in pts],
                         "interval_s": float(slope * sms), "interval_last_pair_s": float(last * sms),
                         "intercept_s": float(icpt)})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--mode", choices=("touch", "bounce", "rows", "scatter", "pair", "widths", "pieces"),
                    default="touch")
    a = ap.parse_args(argv)
    if a.mode in ("pair", "widths", "pieces"):
        return pair_main(a)
    bounce, rows_mode, scatter = a.mode == "bounce", a.mode == "rows", a.mode == "scatter"
    threads_set, per_set = ((BOUNCE_THREADS, BOUNCE_PER_THREAD) if bounce else (ROWS_PITCHES, (4,)) if rows_mode
                            else ((256,), SCATTER_ELEMENT_BYTES) if scatter else (THREADS, PER_THREAD))
    jit = block_bounce if bounce else block_touch
    import torch

    from .provenance import base_provenance, write_record
    from .timing import time_events
    prov = base_provenance("blockrate", touch_gpu=True)
    prov["mode"] = a.mode
    t0 = time.time()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    params = [dict(G=sms * m, threads=t, per_thread=k) for t in threads_set for k in per_set for m in WAVE_MULTIPLES]
    if rows_mode:
        # G a multiple of the tiles in a row of the matrix (512 / 514 of 32 columns)
        params = [dict(G=(sms * m) // (c // 32) * (c // 32), threads=c, per_thread=4)
                  for c in threads_set for m in WAVE_MULTIPLES if sms * m >= c // 32]
        compiled = block_tiles.par_compile([dict(G=p["G"], cols=p["threads"]) for p in params], num_workers=16,
                                           ignore_error=True)
    elif scatter:
        # (the per_thread key carries the element bytes: 2 fp16, half a 128-byte line a tile row; 4 fp32, a line)
        compiled = block_tiles.par_compile([dict(G=p["G"], cols=SCATTER_SHAPE[1], place="scatter",
                                                 dtype=SCATTER_DTYPES[p["per_thread"]]) for p in params],
                                           num_workers=16, ignore_error=True)
    else:
        compiled = jit.par_compile(params, num_workers=16, ignore_error=True)
    times, raw = {}, {}
    for p, kern in zip(params, compiled):
        if kern is None:
            print(f"compile failed: {p}", flush=True)
            continue
        k = max(p["per_thread"], 1)
        n = p["G"] * 1024 if rows_mode else p["G"] * p["threads"] * k
        if scatter:
            n = SCATTER_SHAPE[0] * SCATTER_SHAPE[1]
        tdt = getattr(torch, SCATTER_DTYPES[p["per_thread"]]) if scatter else torch.float16
        A = torch.randn(n, dtype=tdt, device="cuda")
        if rows_mode:
            A = A.view(-1, p["threads"])
        B = torch.zeros_like(A)
        if scatter:
            A, B = A.view(*SCATTER_SHAPE), B.view(SCATTER_SHAPE[1], SCATTER_SHAPE[0])
        fn = ((lambda kern=kern, A=A, B=B: kern(A, B)) if p["per_thread"]      # noqa: E731
              else (lambda kern=kern, B=B: kern(B)))
        fn()
        torch.cuda.synchronize()
        if rows_mode:
            ok = bool(torch.equal(B, A))
        elif scatter:
            ok = tiles_copied(A, B, "scatter", p["G"])
        elif bounce:
            t_, k_ = p["threads"], p["per_thread"]
            ok = bool(torch.equal(B, A.view(p["G"], k_, t_).flip(-1).reshape(-1)))
        else:
            ok = bool(torch.equal(B, A)) if p["per_thread"] else bool((B.view(p["G"], -1)[:, :p["threads"]] == 1).all())
        st = time_events(fn)
        key = (p["threads"], p["per_thread"], p["G"])
        raw["|".join(map(str, key))] = {"median_s": st["median_s"], "p10_s": st.get("p10_s"),
                                         "p90_s": st.get("p90_s"), "n": st.get("n"), "correct": ok}
        if ok:
            times[key] = st["median_s"]
        print(f"threads={p['threads']:5d} per_thread={p['per_thread']} G={p['G']:7d}: "
              f"{st['median_s'] * 1e6:9.2f} us correct={ok}", flush=True)
        del A, B
    rows = fit_rows(times, sms)
    if scatter:
        for r in rows:
            eb = r["per_thread"]
            r.update(element_bytes=eb, per_thread=4, resident_per_sm=8, bytes_per_block=2 * eb * 1024)
    if rows_mode:
        # the "threads" key carried the pitch: the blocks are 256 threads copying 4 elements each
        for r in rows:
            r.update(pitch=r["threads"], threads=256, resident_per_sm=8, bytes_per_block=2 * 2 * 1024)
    for r in rows:
        print(f"threads={r['threads']:5d} per_thread={r['per_thread']} ({r['resident_per_sm']} a SM): "
              f"{r['interval_s'] * 1e9:7.1f} ns a block a SM (last pair {r['interval_last_pair_s'] * 1e9:7.1f}), "
              f"intercept {r['intercept_s'] * 1e6:6.2f} us", flush=True)
    path = write_record(a.out, prov, t0, {"sm_count": sms, "mode": a.mode, "threads": list(threads_set),
                                          "per_thread": list(per_set),
                                          "wave_multiples": list(WAVE_MULTIPLES), "results": rows, "raw": raw},
                        __doc__)
    print(f"wrote {path}")
    return 0


def spread_launches(mode: str, sms: int) -> list:
    """block_tiles' arguments for each launch of --mode widths / pieces on `sms` SMs: per piece
    (dtype, wide), the contiguous reference first (place "rows", the same G and bytes), then each
    width scattered and gathered."""
    G = sms * 512
    values = []
    for dtype, wide in (WIDTHS_PIECES if mode == "widths" else PIECES):
        cols = SCATTER_WIDTHS if mode == "widths" else [32 * wide * 4 ** i for i in range(6)]
        values += [dict(G=G // wide, cols=PAIR_COLS, place="rows", dtype=dtype, wide=wide)]
        values += [dict(G=G // wide, cols=c, place=pl, dtype=dtype, wide=wide)
                   for pl in ("scatter", "gather") for c in cols]
    return values


def pair_main(a) -> int:
    """--mode pair / widths / pieces: one launch of SMs x 512 blocks (/ wide) per line-partner
    distance D or per (piece, width, place), timed twice (the second pass after all of them, for
    drift of the GPU's state)."""
    import torch

    from .derive import widths_wave_run_bytes
    from .provenance import base_provenance, write_record
    from .timing import time_events
    prov = base_provenance("blockrate", touch_gpu=True)
    widths = a.mode in ("widths", "pieces")
    prov["mode"] = a.mode
    t0 = time.time()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    G = sms * 512
    if widths:
        values = spread_launches(a.mode, sms)
    else:
        values = [dict(G=G, cols=PAIR_COLS, place="pair", D=d) for d in PAIR_DISTANCES]
    compiled = block_tiles.par_compile(values, num_workers=16, ignore_error=True)
    results = []
    for rep in range(2):
        for v, kern in zip(values, compiled):
            if kern is None:
                print(f"compile failed: {v}", flush=True)
                continue
            C, place, g, wide = v["cols"], v["place"], v["G"], v.get("wide", 1)
            dt = getattr(torch, v.get("dtype", "float16"))
            tiles = C // (32 * wide)
            if place in ("scatter", "gather"):
                R = SCATTER_SHAPE[0] * SCATTER_SHAPE[1] // C
                moved = (32 * tiles, R * C // (32 * tiles))
                A = torch.randn(*((R, C) if place == "scatter" else moved), device="cuda").to(dt)
                B = torch.zeros(*(moved if place == "scatter" else (R, C)), dtype=dt, device="cuda")
            else:
                A = torch.randn(32 * (g // tiles), C, device="cuda").to(dt)
                B = torch.zeros_like(A)
            fn = lambda kern=kern, A=A, B=B: kern(A, B)       # noqa: E731
            fn()
            torch.cuda.synchronize()
            ok = tiles_copied(A, B, place, g, v.get("D", 1), wide)
            st = time_events(fn)
            key = "cols" if widths else "D"
            row = {key: C if widths else v["D"], "pass": rep, "G": g, "median_s": st["median_s"],
                   "p10_s": st.get("p10_s"), "p90_s": st.get("p90_s"), "n": st.get("n"), "correct": ok,
                   "per_block_per_sm_s": st["median_s"] * sms / g}
            if widths:
                eb = A.element_size()
                row.update(place=place, dtype=v["dtype"], wide=wide, piece_bytes=32 * wide * eb,
                           wave_run_bytes=widths_wave_run_bytes(C, place, sms, wide, eb))
            results.append(row)
            print(f"{key}={row[key]:6d} {place} {v.get('dtype', 'float16')} x{wide} pass {rep}: "
                  f"{st['median_s'] * 1e6:8.2f} us, {st['median_s'] * sms / g * 1e9:6.1f} ns a block an SM, "
                  f"correct={ok}", flush=True)
            del A, B
    path = write_record(a.out, prov, t0, {"sm_count": sms, "mode": a.mode,
                                          ("widths" if widths else "distances"): sorted({v.get("cols") if widths
                                                                                         else v["D"] for v in values}),
                                          "results": results}, __doc__)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
