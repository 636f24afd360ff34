"""Add quantities measured by a later, partial calibration run (`gpu_run.sh --cal-only ...`) to a
committed device profile, each with the run it came from, and derive the model's per-block fixed
cost from the block_stream intercept.

    python benchmarks/merge_calibration.py [--device h200] RUN.json [RUN.json ...]

What is written into src/tileroof/devices/profiles/<device>.toml, before its [fitted.*] tables:
  [measured.tma_load_latency_us]  latency of one TMA tile load, L2-resident (tile_stream, 1 stage)
  [measured.block_overhead_us]    intercept of time per block vs iterations (block_stream, DRAM, 2 stages)
  [measured.block_fixed_us]       that intercept less the 16 KiB epilogue store at the SM's share of the
                                  profile's L2 bandwidth (the model charges epilogue stores separately):
                                  the fixed cost a pipelined block pays (start, first tile, exit)
  [measured.gemm_tile_tflops_fp16] T.gemm rate of a 128x256x64 tile, 2 warpgroups (gemm_loop)
  [measured.atomic_throughput_l2_resident_gops] red.global.add.s32 to distinct addresses of a 16 MiB
                                  table (L2-resident), all SMs
  [measured.wgmma_min_n]          an m64nNk16 wgmma takes as long as one with N = wgmma_min_n when N is
                                  smaller: 128 x t(64x32x128 call) / t(64x128x128 call) (8 instructions
                                  each, one warpgroup, one block per SM), median over the run's repeats
  [measured.wgmma_accumulator_spill_factor]  128x256x64 on one warpgroup over 2 x 128x128x64 (gemm_loop):
                                  the slowdown of a gemm whose accumulator does not fit a thread's registers
  [measured.loop_alu_factor]      } from reduce_chain (row reduction + elementwise update in a dependent
  [measured.reduce_latency_ns]    } loop): time per iteration = reduce_latency + loop_alu_factor x the
                                    model's own CUDA-core time for that kernel (tileroof.analyze of the same
                                    TIR), least squares over the 1-warpgroup, 1-block-per-SM configs
  [measured.l2_reuse_hit_curve]   from an l2probe-*.json run (tileroof.gpu.l2probe): for tiles read by two
                                  blocks of a wave (stride 4), the share of re-reads served by L2 against
                                  the working set between two uses: (DRAM read - W) / (issued / 2 - W)
                                  missed; points (working set bytes, hit share), monotone non-increasing
  [measured.gemm_iteration_cycles_nows] } from a gemm_pipe_nows-*.json run (gemm_pipe --nows): the
  [measured.tensor_rate_share_nows]     } pipelined gemm iteration without warp specialisation, its
  [measured.coresidency_nows]           } fixed cycles, math rate over the peak, co-resident blocks
  [measured.small_block_nows]           } from a gemm_pipe_warps-*.json run (gemm_pipe --warps): blocks of
  [measured.coresidency_warps]          } one and two warps, their math rate and fixed cycles, and
                                          co-resident small blocks by the warps on the SM
  [measured.gemm_wait_cycles]     } from an attn_pipe-*.json run (tileroof.gpu.attn_pipe): what a second gemm
  [measured.gemm_wait_cycles_overlapped] } adds to a pipelined iteration's fixed cost, one / several consumer
                                    warpgroups (its fixed cycles less the profile's gemm_iteration_cycles*)
  [measured.block_stream_gbps]     from a blockstream-*.json run (tileroof.gpu.blockstream): one block's
                                  stream rate with the rest of the GPU idle (derive.block_stream_entry)
  [measured.block_start_interval_ns] } from a blockrate-*.json touch run (tileroof.gpu.blockrate): one SM's
  [measured.warp_start_interval_ns]  } interval between block starts, and between warp launches where a
                                     } block's warps take longer (derive.block_start_entry)
  [measured.dram_spread_write] } from a blockrate-*.json widths run with its contiguous reference: DRAM
  [measured.dram_spread_read]  } time a byte written / read in runs of each length takes over a stream's
                               } (derive.dram_spread_entries)
  [measured.timing_flush_dirty_mb]      } from a flushwb-*.json run (tileroof.gpu.flushwb): the L2 lines the
  [measured.flush_writeback_ns_per_mb]  } harness's flush leaves dirty, what their write-back costs a timed
  [measured.dram_bandwidth_by_read_share] } kernel by its DRAM read share, DRAM bandwidth by read share
  [measured.accumulator_store_ns_per_request] } from timeline-*.json runs of set 8 (the epilogue timed):
  [measured.accumulator_store_queue_requests] } an accumulator stored straight from its fragment costs
                                    s x max(R - R0, 0) for R L2 write requests (derive.epilogue_entries)
  [measured.tensor_boost_clock_mhz] from timeline-*.json runs of sets 8-10: the median SM clock of the
                                    launches under 50 us, over their main loop (set 10) or over blocks that keep the
                                    tensor cores busy to the end (derive.tensor_clock_entry)
  [measured.sm_pace_spread]       } from the other timeline-*.json runs (tileroof.gpu.timeline), given together:
  [measured.sm_pace_spread_drifting] } relative std over SMs of the mean block time per kernel (runs of at
                                    least 0.4 ms), split into the two groups the values fall in (derive.pace_entries)
Numbers are copied from the run files (medians over the runs' repeats); nothing is typed in.

    python benchmarks/merge_calibration.py [--device h200] RUN.json [RUN.json ...] [l2probe-*.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tomllib
from pathlib import Path

from tileroof import devices
from tileroof.gpu import calibrate, derive, tomlw
from tileroof.counts import MMA_SUFFIX


def _entry(name: str, res: dict, run: dict, fname: str) -> dict:
    prov = run["provenance"]
    return {"value": round(float(res["value"]), 4), "unit": res.get("unit"),
            "method": f"{res.get('method')} [run {fname}, {prov.get('gpu')}, driver {prov.get('driver')}, "
                      f"{prov.get('date_utc')}, tilelang {prov.get('tilelang')}, commit {prov.get('tileroof_commit')}]",
            "repeats": [round(v, 4) for v in res.get("repeats", [])],
            "spread_pct": None if res.get("spread_pct") is None else round(res["spread_pct"], 3),
            "reproduces_within_5pct": res.get("reproduces_within_5pct"),
            # what calibrate keeps beside the value (tile_stream's one-SM load rate, ...)
            **calibrate.result_extras(name, res)}


def _where(path: Path, run: dict) -> str:
    """Where a derived entry's numbers come from: the run file, its GPU, date and commit."""
    prov = run["provenance"]
    return f"run {path.name}, {prov.get('gpu')}, {prov.get('date_utc')}, commit {prov.get('tileroof_commit')}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--device", default="h200")
    a = ap.parse_args(argv)
    prof = devices.profiles_dir() / f"{a.device}.toml"
    base = devices.load(a.device)
    tables = {}
    timelines = []

    def from_run(path: Path, run: dict) -> None:
        """The tables one run gives, into `tables` (timeline runs are kept for the end)."""
        if run.get("schema") == "tileroof.timeline/1":
            timelines.append((path, run))
            return
        if run.get("schema") == "tileroof.gemm_pipe/1":
            tables.update(derive.iteration_cost_entries(run, base.tensor_flops_per_clk("fp16"), _where(path, run)))
            return
        if run.get("schema") == "tileroof.gemm_pipe_nows/1":
            tables.update(derive.nows_entries(run, base.tensor_flops_per_clk("fp16"), _where(path, run)))
            return
        if run.get("schema") == "tileroof.gemm_pipe_warps/1":
            # blocks of one or two warps lower their gemms to mma.sync (counts.gemm_instruction): their
            # rate is a share of mma.sync's per-clock peak, not wgmma's
            tables.update(derive.small_block_entries(run, base.tensor_flops_per_clk("fp16" + MMA_SUFFIX),
                                                     base.warp_schedulers, _where(path, run)))
            return
        if run.get("schema") == "tileroof.attn_pipe/1":
            one = tables.get("gemm_iteration_cycles", {}).get("value", base.gemm_iteration_cycles)
            many = tables.get("gemm_iteration_cycles_overlapped", {}).get("value", base.gemm_iteration_cycles_overlapped)
            tables.update(derive.second_gemm_entries(run, base.tensor_flops_per_clk("fp16"), one, many,
                                                     _where(path, run)))
            return
        if run.get("schema") == "tileroof.gemm_chain/1":
            tables.update(derive.chain_hop_entry(run, _where(path, run)))
            return
        if run.get("schema") == "tileroof.divchain/1":
            tables.update(derive.division_entry(run, _where(path, run)))
            return
        if run.get("schema") == "tileroof.blockstream/1":
            tables.update(derive.block_stream_entry(run, _where(path, run)))
            return
        if run.get("schema") == "tileroof.blockrate/1":
            tables.update(derive.block_start_entry(run, _where(path, run)))
            tables.update(derive.dram_spread_entries(run, _where(path, run)))
            return
        if run.get("schema") == "tileroof.flushwb/1":
            tables.update(derive.flushwb_entries(run, _where(path, run)))
            return
        if run.get("schema") == "tileroof.l2probe/1":
            if derive.is_hit_curve_run(run):
                tables["l2_reuse_hit_curve"] = derive.hit_curve_entry(run, _where(path, run))
            else:
                print(f"{path}: an l2probe mode run (not the hit curve's launches), skipped", file=sys.stderr)
            return
        for key in ("tma_load_latency_us", "block_overhead_us", "gemm_tile_tflops_fp16",
                    "atomic_throughput_l2_resident_gops"):
            res = (run.get("results") or {}).get(key)
            if res and res.get("value") is not None:
                if key in tables and key == "block_overhead_us":
                    # a later run of the same benchmark: pool the repeats of both runs
                    prev = tables[key]
                    reps = prev["repeats"] + [round(v, 4) for v in res.get("repeats", [])]
                    res = {**res, "repeats": reps, "value": statistics.median(reps),
                           "spread_pct": (max(reps) - min(reps)) / statistics.median(reps) * 100,
                           "reproduces_within_5pct": (max(reps) - min(reps)) / statistics.median(reps) <= 0.05,
                           "method": f"{res.get('method')}; repeats pooled with {prev['method'].split('[run ')[-1][:-1]}"}
                tables[key] = _entry(key, res, run, path.name)
                if key == "gemm_tile_tflops_fp16":
                    tables.update(derive.gemm_shape_entries(res, f"run {path.name}"))
                if key == "tma_load_latency_us":
                    tables["tma_stream_dram_ns"] = derive.stream_table_entry(res, f"run {path.name}")
        res = (run.get("results") or {}).get("reduce_latency_us")
        if res and res.get("raw"):
            tables.update(derive.reduce_entries(res, base, _where(path, run)))

    profile_gpu = (tomllib.loads(prof.read_text()).get("provenance") or {}).get("gpu")
    for path in a.runs:
        run = json.loads(path.read_text())
        before = dict(tables)
        from_run(path, run)
        gpu = (run.get("provenance") or {}).get("gpu")
        if gpu and profile_gpu and gpu != profile_gpu:
            # a value measured on another GPU (one of the same chip, when the profile's was not lent)
            for key, entry in tables.items():
                if before.get(key) is not entry:
                    entry["note"] = (f"measured on an {gpu}, not this profile's {profile_gpu}: re-measure "
                                     f"on an {profile_gpu} and merge that run here")
    # timeline runs that timed the epilogue (set 8) give its store cost; the others the SMs' pace
    epilogues = [(p, r) for p, r in timelines if derive.timeline_kind(r) == "epilogue"]
    # one-wave launches (set 11): the store rate of a whole wave storing at once
    waves = [(p, r) for p, r in timelines if derive.timeline_kind(r) == "wave"]
    paces = [(p, r) for p, r in timelines if derive.timeline_kind(r) == "pace"]
    # the grouped GEMM's loop at several blocks per SM (sets 13-14): how far apart they finish
    staggers = [(p, r) for p, r in timelines if derive.timeline_kind(r) == "stagger"]
    # the short launches of the epilogue and attention sets give the clock tensor work runs at
    clocked = [(p, r) for p, r in timelines if derive.timeline_kind(r) in ("epilogue", "attention", "clock")]
    for group, derive_entries in ((paces, derive.pace_entries), (epilogues, derive.epilogue_entries),
                                  (waves, derive.wave_store_entries), (staggers, derive.stagger_entry),
                                  (clocked, derive.tensor_clock_entry)):
        if group:
            where = ("runs " + ", ".join(p.name for p, _ in group) + f", {group[0][1]['provenance'].get('gpu')}, commits "
                     + ", ".join(str(r["provenance"].get("tileroof_commit"))[:10] for _, r in group))
            tables.update(derive_entries([r for _, r in group], where))
    if "block_overhead_us" in tables:
        tables["block_fixed_us"] = derive.block_fixed_entry(tables["block_overhead_us"], base.l2_bw, base.sm_count)
    text = prof.read_text()
    head, sep, fitted = text.partition("\n[fitted.")
    for key in tables:                       # replace earlier copies of the same tables
        marker = f"\n[measured.{key}]\n"
        while marker in head:
            i = head.index(marker)
            j = head.find("\n[", i + 1)
            head = head[:i] + (head[j:] if j >= 0 else "\n")
    add = tomlw.dumps({"measured": {k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in tables.items()}})
    prof.write_text(head.rstrip() + "\n\n" + add.strip() + "\n" + (sep + fitted if sep else ""))
    for k, v in tables.items():
        print(f"{k} = {v['value']} {v['unit']}")
    print(f"wrote {prof}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
