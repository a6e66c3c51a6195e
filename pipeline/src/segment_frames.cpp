// run_spans_in_order (segment_frames.hpp): spans run a few at a time, every
// frame handed to the frame sink in order. A span's frames are copied out of
// its pipeline into host memory and wait there until the spans before it
// have been handed over; a worker starts its next span only once the span
// `workers` before that one is done with, so at most `workers` spans are held.
#include "segment_frames.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "segments.hpp"

namespace streamblur::detail {
namespace {

// A frame of a span, copied out of its pipeline, until its turn.
struct HeldFrame {
  FrameView view;  // its planes point into `bytes`
  std::vector<unsigned char> bytes;
};

HeldFrame hold(const FrameView& v) {
  if (v.on_device)
    throw std::invalid_argument("segments do not go with a frame sink in device memory yet (SinkMemory::Host hands "
                                "the frames over in host memory)");
  HeldFrame h;
  h.view = v;
  h.view.stream = nullptr;
  std::size_t total = 0;
  for (int p = 0; p < v.layout.num_planes; ++p) {
    const AnyPlane& pl = v.planes[p];
    total += static_cast<std::size_t>(pl.width) * pl.channels * pl.bytes_per_sample * pl.height;
  }
  h.bytes.resize(total);
  std::size_t at = 0;
  for (int p = 0; p < v.layout.num_planes; ++p) {
    const AnyPlane& pl = v.planes[p];
    const std::size_t row = static_cast<std::size_t>(pl.width) * pl.channels * pl.bytes_per_sample;
    for (int y = 0; y < pl.height; ++y)
      std::memcpy(h.bytes.data() + at + y * row, static_cast<const unsigned char*>(pl.data) + y * pl.pitch, row);
    h.view.planes[p].data = h.bytes.data() + at;
    h.view.planes[p].pitch = static_cast<std::ptrdiff_t>(row);
    at += row * pl.height;
  }
  return h;
}

class InOrder {
 public:
  InOrder(const PipelineOptions& opt, const io::SpanPlanning& plan, const std::vector<FilterInstanceSpec>& chain,
          int64_t shift, const SpanWorkers& workers)
      : opt_(opt), plan_(plan), chain_(chain), shift_(shift), decoders_(workers), workers_(workers.count),
        spans_(plan.spans.size()) {}

  std::vector<RunStats> run() {
    std::vector<std::thread> threads;
    for (int w = 0; w < workers_; ++w) threads.emplace_back([this, w] { work(w); });
    try {
      for (std::size_t k = 0; k < spans_.size() && hand_over(k);) ++k;
    } catch (...) {
      fail(std::current_exception());  // the sink's
    }
    {
      std::lock_guard<std::mutex> lock(m_);  // stopped (the caller's flag): the others stop too
      halt_ = true;
      cv_.notify_all();
    }
    for (std::thread& t : threads) t.join();
    if (error_) std::rethrow_exception(error_);
    std::vector<RunStats> stats;
    for (const Span& s : spans_) stats.push_back(s.stats);
    return stats;
  }

  // Frames handed to the sink.
  int64_t frames() const { return frames_; }

 private:
  struct Span {
    std::deque<HeldFrame> frames;
    bool done = false;
    RunStats stats;
  };

  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(m_);
    if (!error_) error_ = e;
    halt_ = true;
    cv_.notify_all();
  }

  // Worker w: spans w, w + workers, ..., each once the one `workers` before it is handed over.
  void work(int w) {
    for (std::size_t k = static_cast<std::size_t>(w); k < spans_.size(); k += static_cast<std::size_t>(workers_)) {
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return halt_ || k < handed_ + static_cast<std::size_t>(workers_); });
        if (halt_) return;
      }
      PipelineOptions o = span_options(opt_, &halt_);
      o.hwdec = decoders_.decoder(opt_, w);
      o.note = notes_;
      o.frame_sink = [this, k](const FrameView& v) {
        HeldFrame h = hold(v);
        std::lock_guard<std::mutex> lock(m_);
        spans_[k].frames.push_back(std::move(h));
        cv_.notify_all();
      };
      try {
        RunStats st = run_span(o, span_run_of(plan_.spans[k], shift_, chain_));
        std::lock_guard<std::mutex> lock(m_);
        spans_[k].stats = st;
        spans_[k].done = true;
        cv_.notify_all();
      } catch (...) {
        if (!halt_) fail(std::current_exception());  // a span stopped by the others says nothing
        return;
      }
    }
  }

  // Hands span k's frames to the sink as they come; false when the run stops.
  bool hand_over(std::size_t k) {
    for (;;) {
      HeldFrame f;
      {
        std::unique_lock<std::mutex> lock(m_);
        const auto stopped = [&] { return halt_ || (opt_.stop && opt_.stop->load()); };
        while (!stopped() && spans_[k].frames.empty() && !spans_[k].done)
          cv_.wait_for(lock, std::chrono::milliseconds(20));  // and look at the caller's stop flag
        if (stopped()) return false;
        if (spans_[k].frames.empty()) {  // done: the next span's turn
          ++handed_;
          cv_.notify_all();
          return true;
        }
        f = std::move(spans_[k].frames.front());
        spans_[k].frames.pop_front();
      }
      opt_.frame_sink(f.view);
      report();
    }
  }

  void report() {
    ++frames_;
    if (!opt_.progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report_ < std::chrono::milliseconds(250)) return;
    last_report_ = now;
    Progress p;
    p.frames = frames_;
    for (const io::SpanPlan& s : plan_.spans) p.total_estimate += s.frames;
    p.elapsed_s = std::chrono::duration<double>(now - t0_).count();
    p.fps = p.elapsed_s > 0 ? static_cast<double>(frames_) / p.elapsed_s : 0;
    opt_.progress(p);
  }



  const PipelineOptions& opt_;
  const io::SpanPlanning& plan_;
  const std::vector<FilterInstanceSpec>& chain_;
  int64_t shift_;
  SpanWorkers decoders_;
  int workers_;
  std::vector<Span> spans_;
  std::size_t handed_ = 0;  // spans whose frames have all gone to the sink
  std::atomic<bool> halt_{false};
  std::exception_ptr error_;
  const std::function<void(const std::string&)> notes_ = said_once(note_of(opt_));  // each span says the same
  std::mutex m_;
  std::condition_variable cv_;
  int64_t frames_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now(), last_report_ = t0_;
};

}  // namespace

int ordered_span_count(int64_t frames, int64_t frame_bytes, int workers) {
  const int64_t per_span =
      std::clamp<int64_t>(kHeldFramesBytes / (std::max<int64_t>(frame_bytes, 1) * workers), 60, 600);
  return static_cast<int>(std::max<int64_t>(workers, (frames + per_span - 1) / per_span));
}

InOrderRun run_spans_in_order(const PipelineOptions& options, const io::SpanPlanning& plan,
                              const std::vector<FilterInstanceSpec>& chain, int64_t shift,
                              const SpanWorkers& workers) {
  InOrder run(options, plan, chain, shift, workers);
  InOrderRun r;
  r.spans = run.run();
  r.frames = run.frames();
  r.stopped = options.stop && options.stop->load();
  return r;
}

}  // namespace streamblur::detail
