#!/usr/bin/env python3
"""Deliberate bugs, one at a time: does the suite catch each of them?

Run by hand (not in CI; it takes a while):

    tests/mutations.py                    # every mutation, C++ suites (ctest)
    tests/mutations.py --python           # the pytest suite too (rebuilds the module per mutation)
    tests/mutations.py -k rounding -k pts # only mutations whose name or class contains a word
    STREAMBLUR_REQUIRE_GPU=1 tests/mutations.py --gpu   # on the GPU machine: the CUDA mutations too

It clones the repository's HEAD into a scratch folder (with --worktree it
copies the working tree's files instead: tracked and untracked, not
ignored; for a copy whose git history may lag its files, as on the GPU
machine; the working tree is never touched), builds once, then for each mutation: replaces one exact
piece of source text (it must occur exactly once, else the mutation is
reported "stale": the code moved and the table needs updating), rebuilds,
runs the tests, and restores the file. A mutation is "caught" when the tests
fail, "missed" when they pass, "build" when it does not compile. It prints a
table and exits 1 when any mutation is missed or stale.

A mutation marked gpu=True lives in code that only the GPU runs; without
--gpu it is listed as "not run". One marked python=True is caught by the
pytest suite only; without --python it is listed as "not run". With --gpu the tests run with
STREAMBLUR_REQUIRE_GPU=1, so a GPU test that skips counts as a failure of
the set-up, not as a pass.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass


@dataclass
class Mutation:
    name: str
    kind: str  # the class of bug (rounding, weights, borders, ...)
    path: str
    old: str
    new: str
    gpu: bool = False
    python: bool = False  # caught by the pytest suite only: run with --python


M = Mutation
MUTATIONS = [
    # ---- rounding
    M("cpu-gauss-floor", "rounding", "kernels/src/cpu_simd.cpp",
      "hn::ConvertTo(di, hn::Floor(hn::Add(acc, half)))", "hn::ConvertTo(di, hn::Floor(acc))"),
    M("cuda-gauss-floor", "rounding", "kernels/src/device_rows.cuh",
      "fminf(fmaxf(floorf(v + 0.5f), 0.0f), kMax)", "fminf(fmaxf(floorf(v), 0.0f), kMax)", gpu=True),
    M("cpu-box-truncate", "rounding", "kernels/src/cpu_blur.cpp",
      "out[s] = static_cast<T>((sum[s] + n / 2) / n);", "out[s] = static_cast<T>(sum[s] / n);"),
    M("cuda-box-truncate", "rounding", "kernels/src/blur.cu",
      "return (sum + static_cast<Acc>(count / 2)) / static_cast<Acc>(count);",
      "return sum / static_cast<Acc>(count);", gpu=True),
    # Auto's table: a rule that no longer holds sends planes to a slower path,
    # and a fall-back that skips a step to one that cannot run them.
    M("cuda-auto-no-box3", "choice", "kernels/src/blur.cu",
      "{BlurPath::Box3, [](const BlurShape&) { return true; }},",
      "{BlurPath::Box3, [](const BlurShape&) { return false; }},", gpu=True),
    M("cuda-forced-tensor-to-two-pass", "choice", "kernels/src/blur.cu",
      "    {BlurPath::Tensor, BlurPath::Register},\n", "    {BlurPath::Tensor, BlurPath::TwoPass},\n", gpu=True),
    M("cuda-box-truncate-register", "rounding", "kernels/src/device_rows.cuh",
      "const uint32_t n = sum + (count >> 1);", "const uint32_t n = sum;", gpu=True),
    M("cuda-box-truncate-running-64", "rounding", "kernels/src/blur_running.cu",
      "const unsigned long long n = sum + dv.half;", "const unsigned long long n = sum;", gpu=True),
    M("cuda-running-64-quotient-uncorrected", "rounding", "kernels/src/blur_running.cu",
      "  if (rem < 0) --q;\n  else if (rem >= static_cast<int>(dv.d)) ++q;", "  (void)rem;", gpu=True),
    M("cuda-running-whole-row-right-edge", "borders", "kernels/src/blur_running.cu",
      "static_cast<Acc>(x + rx - width + 2) * last", "static_cast<Acc>(x + rx - width + 1) * last", gpu=True),
    M("cuda-running-left-extension", "borders", "kernels/src/blur_running.cu",
      "return static_cast<V>(static_cast<V>(static_cast<long long>(n)) * static_cast<V>(P[C + c]));",
      "return static_cast<V>(static_cast<V>(static_cast<long long>(n + 1)) * static_cast<V>(P[C + c]));", gpu=True),
    M("cuda-running-wrap-position", "overflow", "kernels/src/blur_running.cu",
      "if (k < kMaxWraps) w[1 + k] = s0 + i + C;", "if (k < kMaxWraps) w[1 + k] = s0 + i;", gpu=True),
    # Quotients by steps (8-bit windows whose sums need 64 bits): a step
    # down not taken, and the whole-row slope reversed.
    M("cuda-running-quotient-step-down", "rounding", "kernels/src/blur_running.cu",
      "    s.r += static_cast<int>(dv.d);\n    --s.q;\n", "    s.r += static_cast<int>(dv.d);\n", gpu=True),
    M("cuda-running-whole-row-slope", "window", "kernels/src/blur_running.cu",
      "static_cast<int>(static_cast<uint32_t>(last) - static_cast<uint32_t>(first))",
      "static_cast<int>(static_cast<uint32_t>(first) - static_cast<uint32_t>(last))", gpu=True),
    M("cuda-running-band-edge", "borders", "kernels/src/blur_running.cu",
      "low_tables = prefix_rows(y0 - ry, low);", "low_tables = prefix_rows(y0 - ry + 1, low);", gpu=True),
    M("cuda-running-segment-rows", "window", "kernels/src/blur_running.cu",
      "const int first = k * kSegmentRows + j * kSubRows;", "const int first = k * kSegmentRows + j * kSubRows + 1;",
      gpu=True),
    M("cuda-running-sub-segment", "window", "kernels/src/blur_running.cu",
      "return {k, j > 0 ? k * kSubsPerSegment + j - 1 : -1};",
      "return {k, j > 1 ? k * kSubsPerSegment + j - 1 : -1};", gpu=True),
    # The programmatic dependent launches: a kernel that reads its
    # predecessor's output without waiting for it.
    M("cuda-running-bands-no-wait", "race", "kernels/src/blur_running.cu",
      "  wait_for_previous_kernel();  // scan_segments (and so segment_sums)\n", "", gpu=True),
    M("cuda-running-scan-no-wait", "race", "kernels/src/blur_running.cu",
      "  wait_for_previous_kernel();  // segment_sums\n", "", gpu=True),
    # segment_sums signalling before it has waited for the source's producer:
    # box_bands would then read the source while the producer still writes it.
    M("cuda-running-sums-signal-first", "race", "kernels/src/blur_running.cu",
      "  wait_for_previous_kernel();\n  if (early) let_next_kernel_start();\n",
      "  if (early) let_next_kernel_start();\n  wait_for_previous_kernel();\n", gpu=True),
    M("cuda-running-sums-no-wait", "race", "kernels/src/blur_running.cu",
      "  wait_for_previous_kernel();\n  if (early) let_next_kernel_start();\n",
      "  if (early) let_next_kernel_start();\n", gpu=True),
    M("cuda-running-scan-parts", "window", "kernels/src/blur_running.cu",
      "if (part >= d) run += n;", "if (part > d) run += n;", gpu=True),
    M("cuda-running-right-edge", "borders", "kernels/src/blur_running.cu",
      "if (i >= width) return right_of(v, i - width, c);", "if (i >= width) return right_of(v, i - width + 1, c);",
      gpu=True),
    M("cuda-running-leaving-row", "window", "kernels/src/blur_running.cu",
      "leaving[g] = load_samples(row(min(max(y + g - ry - 1, 0), height - 1)), s0, samples, whole);",
      "leaving[g] = load_samples(row(min(max(y + g - ry, 0), height - 1)), s0, samples, whole);", gpu=True),
    M("cuda-running-eight-outputs-step", "window", "kernels/src/blur_running.cu",
      "        before[j % C] = sum;", "        if (h == 0) before[j % C] = sum;", gpu=True),
    M("cuda-running-row-step", "window", "kernels/src/blur_running.cu",
      "next_quotient(qs[j], static_cast<int>(sum - above_sum[j]), inv_count);",
      "next_quotient(qs[j], 0, inv_count);", gpu=True),
    M("cuda-running-wrap-records-first-row", "window", "kernels/src/blur_running.cu",
      "|| (g == 0 && y == y0); };", "|| (g == 0 && y == y0 && false); };", gpu=True),
    M("cuda-running-four-outputs", "window", "kernels/src/blur_running.cu",
      "load4(P, s4 + off_hi, hi, m_hi);", "load4(P, s4 + off_hi - 1, hi, m_hi);", gpu=True),
    M("cuda-running-load-phase", "window", "kernels/src/blur_running.cu",
      "case 1: groups(integral_constant<int, 2>{}, integral_constant<int, 3>{}); break;",
      "case 1: groups(integral_constant<int, 3>{}, integral_constant<int, 2>{}); break;", gpu=True),
    M("cuda-running-straddle-clamp", "borders", "kernels/src/blur_running.cu",
      "const int xc = min(max(i, 0), width);", "const int xc = min(max(i, 0), width - 1);", gpu=True),
    M("cuda-wide-rows-shift", "borders", "kernels/src/blur_wide.cu",
      "const int base = xs - (radius + front) * C;", "const int base = xs - (radius + front) * C + 1;", gpu=True),
    M("cuda-wide-left-channel", "borders", "kernels/src/blur_wide.cu",
      "if (s < 0) return ((s % C) + C) % C;", "if (s < 0) return 0;", gpu=True),
    M("cuda-wide-top-edge", "borders", "kernels/src/blur_wide.cu",
      "Z[q] = load_pair(row_ptr(col, pitch, min(max(next + q, 0), height - 1)));",
      "Z[q] = load_pair(row_ptr(col, pitch, min(max(next + q, 1), height - 1)));", gpu=True),
    M("cuda-wide-fixed-point-scale", "rounding", "kernels/src/blur_wide.cu",
      "u[j] = __float2uint_rn(acc[j] * 256.0f);", "u[j] = __float2uint_rn(acc[j] * 255.0f);", gpu=True),
    M("cuda-box3-right-edge", "borders", "kernels/src/blur_tiled.cu",
      "if (lane == 31) outer[i] = row[min(x + kBox3Lane, width - 1)];",
      "if (lane == 31) outer[i] = row[min(x + kBox3Lane - 1, width - 1)];", gpu=True),
    M("cuda-box3-one-stride", "borders", "kernels/src/blur_tiled.cu",
      "y0 += static_cast<int>(gridDim.y) * kBox3Warps * kBox3Rows)", "y0 += height)", gpu=True),
    M("cuda-box3-never-strided", "borders", "kernels/src/blur_tiled.cu",
      "const bool strided = static_cast<long long>(grid_y) * rows_per_block < height;",
      "const bool strided = false;", gpu=True),
    M("cuda-box3-rounding", "rounding", "kernels/src/blur_tiled.cu",
      "return __umulhi(s + 4u, 0x38E38E39u) >> 1;", "return __umulhi(s, 0x38E38E39u) >> 1;", gpu=True),
    M("cuda-register-halo-short", "borders", "kernels/src/blur_tiled.cu",
      "right[j] = in[min(x0 + kTileW + tx, width - 1)];", "right[j] = in[min(x0 + kTileW + tx - 1, width - 1)];",
      gpu=True),
    M("cpu-p010-low-bits-truncate", "rounding", "kernels/src/cpu_blur.cpp",
      "std::min<uint32_t>((row[s] + half) & ~((1u << shift) - 1), top)",
      "std::min<uint32_t>((row[s]) & ~((1u << shift) - 1), top)"),
    M("cuda-p010-low-bits-truncate", "rounding", "kernels/src/blur.cu",
      "min((row[x] + half) & ~((1u << shift) - 1), top)", "min((row[x]) & ~((1u << shift) - 1), top)", gpu=True),
    M("cuda-shift-low-bits-kept", "rounding", "kernels/src/blur_wide.cu",
      "  const uint32_t keep = 0xFFFFu >> shift << shift;", "  const uint32_t keep = 0xFFFFu;", gpu=True),
    M("cuda-shift-register-low-bits-kept", "rounding", "kernels/src/blur_tiled.cu",
      "  const uint32_t keep = (0xFFFFu >> shift << shift) * 0x10001u;", "  const uint32_t keep = ~0u;", gpu=True),
    M("cpu-pixelate-truncate", "rounding", "kernels/src/effects.cpp",
      "sum[cell * C + c] = (sum[cell * C + c] + n / 2) / n;", "sum[cell * C + c] = sum[cell * C + c] / n;"),
    M("cuda-pixelate-truncate", "rounding", "kernels/src/effects.cu",
      "const T mean = static_cast<T>((sum + n / 2) / n);", "const T mean = static_cast<T>(sum / n);", gpu=True),
    M("cuda-unsharp-floor", "rounding", "kernels/src/effects.cu",
      "floorf(src + amount * d + 0.5f)", "floorf(src + amount * d)", gpu=True),
    M("cpu-unsharp-threshold-ignored", "weights", "kernels/src/effects.cpp",
      "if (std::abs(d) < threshold) return static_cast<T>(src);", "(void)threshold;"),
    # ---- weights
    M("gauss-sigma-squared", "weights", "kernels/src/params.cpp",
      "std::exp(-static_cast<double>(i) * i / (2.0 * sigma * sigma))",
      "std::exp(-static_cast<double>(i) * i / (sigma * sigma))"),
    M("gauss-radius-2sigma", "weights", "kernels/src/params.cpp",
      "std::ceil(3.0 * sigma)", "std::ceil(2.0 * sigma)"),
    # ---- borders
    M("cpu-vertical-border-wraps", "borders", "kernels/src/cpu_blur.cpp",
      "tmp.row(std::clamp(y + k, 0, H - 1))", "tmp.row(((y + k) % H + H) % H)"),
    # ---- chroma scaling and layout
    M("chroma-sigma-not-scaled", "chroma", "pipeline/src/blur_filters.cpp",
      "return {std::max(kMinSigma, sigma_ / (1 << lw)),", "return {std::max(kMinSigma, sigma_),"),
    # ---- each plane
    M("gpu-download-drops-last-plane", "planes", "pipeline/src/cuda_route.cpp",
      """  for (int p = 0; p < l.num_planes; ++p)
    av_image_copy_plane(out->data[p], out->linesize[p], c.plane(false, p), static_cast<int>(c.pitch[p]),""",
      """  for (int p = 0; p < l.num_planes - 1; ++p)
    av_image_copy_plane(out->data[p], out->linesize[p], c.plane(false, p), static_cast<int>(c.pitch[p]),""",
      gpu=True),
    M("cuda-register-dp2a-odd-half", "weights", "kernels/src/blur_tiled.cu",
      "else acc = __dp2a_hi(taps.xq[m], odd[i / 4], acc);", "else acc = __dp2a_lo(taps.xq[m], odd[i / 4], acc);",
      gpu=True),
    M("cuda-register-fixed-point-remainder", "weights", "kernels/src/blur_tiled.cu",
      "    q[R] += (1 << kTapBits) - sum;", "    (void)sum;", gpu=True),
    M("cuda-tensor-lo-dropped", "weights", "kernels/src/blur_tensor.cu",
      "        *reinterpret_cast<__half2*>(h_lo + i) = __floats2half2_rn(v0 - f.x, v1 - f.y);",
      "        *reinterpret_cast<__half2*>(h_lo + i) = __floats2half2_rn(0.0f, 0.0f);", gpu=True),
    M("cuda-tensor-column-offset", "borders", "kernels/src/blur_tensor.cu",
      "  taps.x_offset = align4(rx) - rx;", "  taps.x_offset = align4(rx) - rx + (rx % 4 == 1);",
      gpu=True),
    M("cuda-tensor-pair-left-edge", "borders", "kernels/src/blur_tensor.cu",
      "    if (c < 0) c = C == 1 ? 0 : (c % C + C) % C;", "    if (c < 0) c = 0;", gpu=True),
    M("cuda-tensor-last-tile-row", "borders", "kernels/src/blur_tensor.cu",
      "      if (y >= height || x >= width) continue;", "      if (y >= height - 1 || x >= width) continue;", gpu=True),
    M("cuda-tensor-vertical-band-short", "weights", "kernels/src/blur_tensor.cu",
      "    for (int s = 0; s < SY; ++s) {\n      // b[0], b[1]",
      "    for (int s = 0; s < (SY > 1 ? SY - 1 : 1); ++s) {\n      // b[0], b[1]", gpu=True),
    M("cuda-tensor-pair-staging", "planes", "kernels/src/blur_tensor.cu",
      "make_uint2(to_half2(words[k][0], 0x4341), to_half2(words[k][1], 0x4341));",
      "make_uint2(to_half2(words[k][1], 0x4341), to_half2(words[k][0], 0x4341));", gpu=True),
    M("cuda-tensor-pair-late-round", "planes", "kernels/src/blur_tensor.cu",
      "height, following % tiles_x * kTileW,\n", "height, tile % tiles_x * kTileW,\n", gpu=True),
    M("cuda-tensor-pair-interleave", "planes", "kernels/src/blur_tensor.cu",
      "return make_uint4(__byte_perm(u.x, w.x, 0x5140),", "return make_uint4(__byte_perm(u.x, w.x, 0x4051),", gpu=True),
    M("graph-branch-wrong-plane", "planes", "pipeline/src/chain_graphs.cpp",
      "work(planes[b + 1], st);", "work(planes[b], st);", gpu=True),
    M("graph-kept-after-scratch-moves", "planes", "pipeline/src/chain_graphs.cpp",
      "if (bytes == device_bytes && (branch_device < 0 || device == branch_device)) return;",
      "if (branch_device < 0 || device == branch_device) return;", gpu=True),
    M("graph-never-used", "planes", "pipeline/src/chain_graphs.cpp",
      "  if (nodes < 2) return {};", "  return {};", gpu=True),
    # ---- timestamps and time bases
    M("passthrough-no-rescale", "time bases", "io/src/writer.cpp",
      "av_packet_rescale_ts(&packet, m.input_tbs[in_index], m.oc->streams[out_index]->time_base);",
      "/* mutation: no rescale */"),
    # ---- stream copy
    M("no-sar", "stream copy", "io/src/writer.cpp",
      "ctx->sample_aspect_ratio = sar;", "ctx->sample_aspect_ratio = AVRational{0, 1};"),
    M("no-chroma-location", "stream copy", "io/src/writer.cpp",
      "ctx->chroma_sample_location = first.chroma_location;", "/* mutation: no chroma location */"),
    M("no-passthrough-disposition", "stream copy", "io/src/writer.cpp",
      "  st->disposition = ist.disposition;\n  copy_stream_metadata(&st->metadata, ist.metadata);\n  stream_map",
      "  copy_stream_metadata(&st->metadata, ist.metadata);\n  stream_map"),
    M("no-passthrough-tags", "stream copy", "io/src/writer.cpp",
      "  copy_stream_metadata(&st->metadata, ist.metadata);\n  stream_map", "  stream_map"),
    # ---- colour tags
    M("no-colour-range", "colour tags", "io/src/writer.cpp",
      "ctx->color_range = first.color_range;", "/* mutation: no colour range */"),
    # ---- overwrite refusal and temp files
    M("overwrite-not-refused", "overwrite", "io/src/output_file.cpp",
      "    if (r.replaces && !rules.overwrite)", "    if (false && r.replaces && !rules.overwrite)"),
    M("temp-left-on-failure", "temp files", "io/src/output_file.cpp",
      "    if (kind_ == OutputKind::Sequence) fs::remove_all(temp_, ec);\n    else ::unlink(temp_.c_str());",
      "    (void)ec;"),
    # ---- order, pts, exit codes
    M("no-reordering", "order", "pipeline/src/pipeline.cpp",
      "make_edge(finish_node, in_order);", "make_edge(finish_node, sink_node);"),
    M("video-pts-shifted", "pts", "io/src/writer.cpp",
      "pts = av_rescale_q(pts, m.input_video_tb, m.enc_tb);", "pts = av_rescale_q(pts, m.input_video_tb, m.enc_tb) + 1;"),
    M("ctrl-c-exits-0", "exit codes", "apps/cli_report.cpp",
      "int interrupted_status() { return 128 + g_first_signal.load(); }", "int interrupted_status() { return 0; }"),
    # ---- metadata
    M("no-chapters", "metadata", "io/src/writer.cpp",
      "av_dict_copy(&oc->chapters[oc->nb_chapters - 1]->metadata, c->metadata, 0);",
      "av_dict_copy(&oc->chapters[oc->nb_chapters - 1]->metadata, c->metadata, 0); oc->nb_chapters = 0;"),
    # ---- segments
    M("span-frames-numbered-from-0", "index", "pipeline/src/pipeline.cpp",
      "  c.index = first_index() + seq;\n", "  c.index = seq;\n"),
    M("span-join-drops-other-streams", "streams", "io/src/span_join.cpp",
      "      writer.write_passthrough(*o);\n", "      // mutation: not copied\n"),
    M("span-spool-loses-pts", "pts", "io/src/span_join.cpp",
      "  p.pts = h.pts;\n", "  p.pts = h.dts;\n"),
    M("span-trim-no-shift", "pts", "io/src/reader.cpp",
      "  if (span.from_pts || span.until_pts) shift = span.pts_shift;\n", "\n"),
    M("join-copies-untrimmed", "trim", "io/src/span_join.cpp",
      "      if (packet_->stream_index == video_ || !admit(t)) continue;", "      if (packet_->stream_index == video_) continue;"),
    M("span-parses-its-own-chain", "regions", "pipeline/src/segments.cpp",
      "  r.chain = &chain;\n", "\n"),
    M("span-frames-handed-backwards", "order", "pipeline/src/segment_frames.cpp",
      "        f = std::move(spans_[k].frames.front());\n        spans_[k].frames.pop_front();",
      "        f = std::move(spans_[k].frames.back());\n        spans_[k].frames.pop_back();"),
    M("span-workers-take-one-span-each", "spans", "pipeline/src/segments.cpp",
      "for (std::size_t k = next_++; k < n_ && !halt_; k = next_++) run_one(k, w);",
      "if (std::size_t k = next_++; k < n_ && !halt_) run_one(k, w);"),
    M("auto-ignores-the-cores", "auto", "pipeline/src/segments.cpp",
      "    bounds.push_back({std::min(kAutoCpuSpans, std::max(1, cores / 2)),",
      "    bounds.push_back({kAutoCpuSpans,"),
    M("mixed-workers-decode-as-asked", "decoders", "pipeline/src/segments.hpp",
      "return worker >= count - cpu ? HwDecode::None : o.hwdec;", "return o.hwdec;", gpu=True),
    M("ray-span-files-left", "cleanup", "python/streamblur/ray.py",
      "                os.remove(spool)\n", "                pass\n", python=True),
    M("stdin-dash-not-mapped", "pipes", "io/src/reader.cpp",
      'path == "-" ? "pipe:0" : path;', "path;"),
    M("network-output-as-a-file", "network", "io/src/output_file.cpp",
      '  if (path == "-" || is_network_url(path)) return {OutputKind::Stream, path, false};',
      '  if (path == "-") return {OutputKind::Stream, path, false};'),
    M("network-container-from-extension", "network", "io/src/default_encoder.cpp",
      "  if (is_network_url(path)) {\n    const std::string scheme", "  if (false) {\n    const std::string scheme"),
    M("input-options-dropped", "options", "pipeline/src/pipeline.cpp",
      "  ropt.format_options = opt_.input_options;\n", "\n"),
    M("output-options-dropped", "options", "io/src/writer.cpp",
      "  for (const auto& [k, v] : options.format_options) av_dict_set(&given, k.c_str(), v.c_str(), 0);\n", "\n"),
    # ---- the Python module
    M("out-channel-axis-ignored", "shape", "python/src/arrays.cpp",
      "if (src.ndim != dst.ndim || src.width", "if (src.width", python=True),
    M("progress-exception-no-stop", "stop", "python/src/video.cpp",
      "      stop.store(true);\n", "      /* mutation: the run goes on */\n", python=True),
    M("cupy-fast-path-packed-pitch", "borders", "python/src/cupy_path.cpp",
      "  im.pitch = static_cast<std::ptrdiff_t>(row);\n", "  im.pitch = static_cast<std::ptrdiff_t>(w * pixel);\n",
      gpu=True, python=True),
]


def run(cmd, cwd, env=None, log=None, timeout=3600):
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    if log is not None:
        with open(log, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{r.stdout}\n")
    return r.returncode


def check_texts(root, chosen):
    """1 when a mutation's text is not in its file exactly once (it went stale), else 0."""
    stale = [m for m in chosen if open(os.path.join(root, m.path)).read().count(m.old) != 1]
    for m in stale:
        print(f"mutations: {m.name}: its text is not in {m.path} exactly once; update it to the code", file=sys.stderr)
    print(f"mutations: {len(chosen) - len(stale)} of {len(chosen)} apply")
    return 1 if stale else 0


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", action="append", default=[], help="only mutations whose name or class contains this")
    ap.add_argument("--gpu", action="store_true", help="run the gpu=True mutations too (STREAMBLUR_REQUIRE_GPU=1)")
    ap.add_argument("--python", action="store_true", help="also rebuild the Python module and run pytest")
    ap.add_argument("--keep", action="store_true", help="keep the scratch clone")
    ap.add_argument("--worktree", action="store_true",
                    help="copy the working tree's files (tracked and untracked, not ignored) instead of cloning HEAD")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--check", action="store_true",
                    help="check that each mutation's text occurs once in its file (none went stale) and exit")
    ap.add_argument("-R", dest="regex", default="", help="run only the ctest tests matching this regex")
    return ap.parse_args()


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    a = parse_args()
    chosen = [m for m in MUTATIONS if not a.k or any(k in m.name or k in m.kind for k in a.k)]
    if a.check:
        return check_texts(root, chosen)
    if a.list:
        for m in chosen:
            print(f"{m.name:34} {m.kind:12} {m.path}{'  (gpu)' if m.gpu else ''}{'  (python)' if m.python else ''}")
        return 0

    # Beside the checkout, so a ccache with base_dir above both hits the unmutated files.
    scratch = tempfile.mkdtemp(prefix="streamblur-mutations-", dir=os.path.dirname(root))
    src, build, log = os.path.join(scratch, "src"), os.path.join(scratch, "build"), os.path.join(scratch, "log.txt")
    print(f"scratch clone: {src}; log: {log}", flush=True)
    if a.worktree:
        files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=root, check=True,
                               stdout=subprocess.PIPE).stdout.decode().split("\0")
        for f in filter(None, files):
            if os.path.isfile(os.path.join(root, f)):
                os.makedirs(os.path.dirname(os.path.join(src, f)), exist_ok=True)
                shutil.copy2(os.path.join(root, f), os.path.join(src, f))
    else:
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", root, src], check=True)
    env = dict(os.environ)
    env["PATH"] = "/usr/local/cuda/bin:" + env.get("PATH", "")
    if a.gpu:
        env["STREAMBLUR_REQUIRE_GPU"] = "1"
    cfg = ["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DSTREAMBLUR_BUILD_TESTS=ON",
           "-DSTREAMBLUR_BUILD_APPS=ON"]
    if shutil.which("ccache"):
        cfg += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
    if env.get("CMAKE_CUDA_ARCHITECTURES"):
        cfg.append("-DCMAKE_CUDA_ARCHITECTURES=" + env["CMAKE_CUDA_ARCHITECTURES"])
    jobs = str(os.cpu_count() or 2)
    pydir = os.path.join(scratch, "py")

    def tests_pass():
        if run(["cmake", "--build", build, "-j", jobs], src, env, log) != 0:
            return None
        ok = run(["ctest", "--test-dir", build, "-j", jobs, "--no-tests=error", "--output-on-failure"] +
                 (["-R", a.regex] if a.regex else []), src, env, log) == 0
        if ok and a.python:
            penv = dict(env, CMAKE_ARGS=" ".join(c for c in cfg if c.startswith("-DCMAKE_C")))
            if run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--upgrade", "--target",
                    pydir, "./python", "./python/testing"], src, penv, log) != 0:
                return None
            ok = run([sys.executable, "-m", "pytest", "-q", "-x", "python/tests"], src,
                     dict(env, PYTHONPATH=pydir), log) == 0
        return ok

    if run(cfg, src, env, log) != 0 or not tests_pass():
        print(f"the unmutated tree does not build or pass its tests; see {log}")
        return 2

    results = []
    for m in chosen:
        if (m.gpu and not a.gpu) or (m.python and not a.python):
            results.append((m, "not run", 0.0))
            continue
        path = os.path.join(src, m.path)
        text = open(path).read()
        if text.count(m.old) != 1:
            results.append((m, "stale", 0.0))
            continue
        t0 = time.time()
        with open(log, "a") as f:
            f.write(f"\n===== mutation {m.name}\n")
        open(path, "w").write(text.replace(m.old, m.new))
        try:
            ok = tests_pass()
        finally:
            open(path, "w").write(text)
        status = "build" if ok is None else "MISSED" if ok else "caught"
        results.append((m, status, time.time() - t0))
        print(f"{m.name:34} {m.kind:12} {status}", flush=True)
    run(["cmake", "--build", build, "-j", jobs], src, env, log)  # leave the clone built as it was

    print("\n| mutation | class | file | result |\n|---|---|---|---|")
    for m, status, _ in results:
        print(f"| {m.name} | {m.kind} | {m.path} | {status} |")
    bad = [m.name for m, s, _ in results if s in ("MISSED", "stale")]
    if not a.keep and not bad:
        shutil.rmtree(scratch, ignore_errors=True)
    elif bad:
        print(f"kept {scratch} (log: {log})")
    if bad:
        print("missed or stale: " + ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
