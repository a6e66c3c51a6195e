// A segmented run in steps for other processes (detail/segment_tasks.hpp):
// the plan, the cut of segments.cpp; each span, run_span into a named spool;
// the join, io::join_spans from those spools.
#include "streamblur/pipeline/detail/segment_tasks.hpp"

#include <chrono>
#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>

#include "streamblur/io/keyframe_index.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/io/reader.hpp"
#include "streamblur/pipeline/detail/span_run.hpp"
#include "streamblur/pipeline/regions.hpp"
#include "segments.hpp"

namespace streamblur::detail {
namespace {

// What the steps need beyond what segments need: a file out, no regions.
void check_task_options(const PipelineOptions& o, const std::vector<FilterInstanceSpec>& chain) {
  check_segment_options(o);
  if (o.output.empty() || o.frame_sink)
    throw std::invalid_argument("segments in separate processes need an output file (no frame sink)");
  for (const FilterInstanceSpec& f : chain)
    if (regions_of(f))
      throw std::invalid_argument("segments in separate processes do not go with a regions file yet (its checks "
                                  "count the boxes every span used); run it in one process");
}

io::MediaReader trimmed_reader(const PipelineOptions& o) {
  io::ReaderOptions ro;
  ro.warn = note_of(o);
  ro.span = io::ReadSpan{.start_seconds = o.start_seconds, .duration_seconds = o.duration_seconds};
  return io::MediaReader(o.input, ro);
}

}  // namespace

SegmentPlan plan_segments(const PipelineOptions& o) {
  check_task_options(o, parse_filter_chain(o.filters));
  // The output's rules now, before any span runs: an output that exists
  // (without overwrite) or that is the input fails here, not at the join.
  { io::OutputFile probe(o.output, "output", io::OutputRules{o.overwrite, {o.input}, note_of(o)}); }
  SegmentPlan plan;
  plan.one_because = o.segments == 1 ? "one segment was asked for" : read_once(o.input);
  if (!plan.one_because.empty()) return plan;
  const io::MediaReader source = trimmed_reader(o);
  const io::VideoPacketIndex index = io::scan_video_packets(o.input, source.video_stream_index());
  const SegmentCut cut = cut_segments(o, source, index);
  plan.copy = cut.copy;
  plan.notes = cut.notes;
  plan.one_because = cut.one_because;
  if (!plan.one_because.empty()) return plan;
  for (const io::SpanPlan& s : cut.plan.spans) {
    PlannedSpan p;
    if (s.start_pts != std::numeric_limits<int64_t>::min()) p.from_pts = s.start_pts;
    if (s.end_pts != std::numeric_limits<int64_t>::max()) p.until_pts = s.end_pts;
    p.first_index = s.first_frame;
    p.frames = s.frames;
    plan.spans.push_back(p);
  }
  return plan;
}

SpooledSpan run_span_into(const PipelineOptions& o, const SegmentPlan& plan, std::size_t span,
                          const std::string& spool) {
  if (span >= plan.spans.size())
    throw std::invalid_argument("span " + std::to_string(span + 1) + " is not in a plan of " +
                                std::to_string(plan.spans.size()));
  const std::vector<FilterInstanceSpec> chain = parse_filter_chain(o.filters);
  check_task_options(o, chain);
  const PlannedSpan& s = plan.spans[span];
  SpanRun r;
  r.from_pts = s.from_pts;
  r.until_pts = s.until_pts;
  r.first_index = s.first_index;
  r.pts_shift = plan.copy.shift;
  r.chain = &chain;
  std::unique_ptr<io::PacketSpool> file = io::PacketSpool::create(spool);
  io::EncodedVideo encoded;
  r.video_packets = [&file](const AVPacket& p) { file->append(p); };
  r.encoded = &encoded;
  PipelineOptions so = span_options(o, nullptr);
  so.stop = o.stop;
  SpooledSpan out;
  try {
    out.stats = run_span(so, r);
    file.reset();  // flushed and closed
  } catch (...) {
    file.reset();
    std::error_code ec;
    std::filesystem::remove(spool, ec);
    throw;
  }
  out.encoded = io::encoded_video_bytes(encoded);
  return out;
}

RunStats join_spooled(const PipelineOptions& o, const SegmentPlan& plan, const std::vector<std::string>& spools,
                      const std::vector<int64_t>& frames, const std::vector<std::string>& encoded) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = plan.spans.size();
  if (n == 0 || spools.size() != n || frames.size() != n || encoded.size() != n)
    throw std::invalid_argument("a join needs a spool, a frame count and encoder parameters for each of the " +
                                std::to_string(n) + " spans");
  check_task_options(o, parse_filter_chain(o.filters));
  const auto note = note_of(o);
  io::OutputFile out(o.output, "output", io::OutputRules{o.overwrite, {o.input}, note});
  std::vector<io::EncodedVideo> videos;
  std::vector<int64_t> planned;
  for (std::size_t k = 0; k < n; ++k) {
    videos.push_back(io::encoded_video_of(encoded[k]));
    planned.push_back(plan.spans[k].frames);
  }
  if (const std::string why = unjoinable(planned, frames, videos); !why.empty())
    throw std::runtime_error("the spans cannot be joined: " + why);
  std::vector<std::unique_ptr<io::PacketSpool>> files;
  std::vector<io::PacketSpool*> readers;
  for (const std::string& path : spools) {
    files.push_back(io::PacketSpool::open(path));
    readers.push_back(files.back().get());
  }
  const io::MediaReader source = trimmed_reader(o);
  io::join_spans(o.input, source.streams(), videos.front(), readers, out.url(), join_options(o, note), plan.copy);
  RunStats st;
  for (const int64_t f : frames) st.frames += f;
  out.commit(st.frames);
  st.segments = static_cast<int>(n);
  st.join_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace streamblur::detail
