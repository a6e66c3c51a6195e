// process_video and process_videos (video.hpp): run_pipeline / run_batch on
// a thread of their own without the GIL, the calling thread waiting with
// Ctrl-C working (run_stoppable), and a Python progress callback called from
// the pipeline's threads (PyCallback).
#include "video.hpp"

#include <atomic>
#include <exception>
#include <functional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "streamblur/pipeline/batch.hpp"
#include "streamblur/pipeline/detail/segment_tasks.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/stats_json.hpp"

namespace streamblur::python {
namespace {

BackendChoice parse_backend_choice(const std::string& backend) {
  if (backend == "auto") return BackendChoice::Auto;
  if (backend == "cpu") return BackendChoice::Cpu;
  if (backend == "cuda") return BackendChoice::Cuda;
  throw std::invalid_argument("backend must be 'auto', 'cpu' or 'cuda', got '" + backend + "'");
}

// A Python progress callback called from a pipeline thread: it takes the GIL,
// and the first exception it raises sets `stop` and is kept to be raised again
// on the calling thread (raise_if_failed()).
class PyCallback {
 public:
  explicit PyCallback(nb::object fn) : fn_(std::move(fn)) {}
  bool empty() const { return fn_.is_none(); }
  template <class MakeDict>
  void call(MakeDict&& make) {
    if (stop.load()) return;
    nb::gil_scoped_acquire gil;
    try {
      fn_(make());
    } catch (nb::python_error& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_.emplace(std::move(e));
      stop.store(true);
    }
  }
  // Raises the callback's exception, if any (GIL held).
  void raise_if_failed() {
    std::optional<nb::python_error> e;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_) {
        e.emplace(std::move(*error_));
        error_.reset();
      }
    }
    if (e) throw nb::python_error(std::move(*e));
  }
  std::atomic<bool> stop{false};

 private:
  nb::object fn_;
  std::mutex mutex_;
  std::optional<nb::python_error> error_;
};

// Runs `work` (run_pipeline or run_batch, watching callback.stop) on a thread
// of its own without the GIL, the calling thread waiting in wait_or_signal.
// A signal handler that raises (Ctrl-C) sets the stop flag: as the CLI's
// first Ctrl-C, reading stops, the frames in flight are finished and the
// output is written at its final name. Once the run has ended, the handler's
// exception is raised; otherwise the progress callback's, then the run's own.
void run_stoppable(const std::function<void()>& work, PyCallback& callback) {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    cv.notify_all();
  });
  struct JoinOnExit {  // the worker uses this frame: it never outlives it, whatever throws
    std::thread& worker;
    std::atomic<bool>& stop;
    ~JoinOnExit() {
      if (!worker.joinable()) return;
      stop.store(true);  // the run is over already, unless something threw here
      nb::gil_scoped_release no_gil;
      worker.join();
    }
  } join_on_exit{worker, callback.stop};
  std::optional<nb::python_error> interrupted;
  if (!wait_or_signal(mutex, cv, [&] { return done; })) {
    interrupted.emplace();  // takes the handler's exception off the thread state
    callback.stop.store(true);
    nb::gil_scoped_release no_gil;
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return done; });  // the frames in flight, then the output's trailer
  }
  {
    nb::gil_scoped_release no_gil;
    worker.join();
  }
  if (interrupted) throw nb::python_error(std::move(*interrupted));
  callback.raise_if_failed();  // the callback's exception is the cause of the run's
  if (error) std::rethrow_exception(error);
}

nb::dict progress_dict(const Progress& p) {
  nb::dict d;
  d["frames"] = p.frames;
  d["total_estimate"] = p.total_estimate;
  d["elapsed_s"] = p.elapsed_s;
  d["fps"] = p.fps;
  d["media_time_s"] = p.media_time_s;
  d["duration_s"] = p.duration_s;
  d["final"] = p.final;
  return d;
}

nb::dict batch_progress_dict(const BatchProgress& p) {
  nb::dict d;
  d["files_total"] = p.files_total;
  d["files_done"] = p.files_done;
  d["files_failed"] = p.files_failed;
  d["running"] = p.running;
  d["frames"] = p.frames;
  d["elapsed_s"] = p.elapsed_s;
  d["fps"] = p.fps;
  d["eta_s"] = p.eta_s;
  d["final"] = p.final;
  return d;
}

}  // namespace

nb::dict run_stats_dict(const RunStats& s) {
  return nb::cast<nb::dict>(nb::module_::import_("json").attr("loads")(run_stats_json(s)));
}

PipelineOptions base_options(const std::string& vf, const std::string& backend, const std::string& hwdec, int device,
                             int inflight) {
  PipelineOptions o;
  o.filters = vf;
  if (!vf.empty()) parse_filter_chain(vf);  // a bad spec fails here as ValueError
  o.backend = parse_backend_choice(backend);
  o.hwdec = parse_hwdec(hwdec);
  if (device < 0) throw std::invalid_argument("device must be a CUDA device index >= 0, got " + std::to_string(device));
  o.device = device;
  if (inflight < 1 || inflight > 64) throw std::invalid_argument("inflight must be between 1 and 64");
  o.inflight = inflight;
  return o;
}

nb::dict process_video(const std::string& src, const std::string& dst, const std::string& vf, const std::string& codec,
                       int crf, const std::string& preset, const std::string& backend, const std::string& hwdec,
                       int device, bool overwrite, int inflight, nb::object progress, std::optional<double> start,
                       std::optional<double> duration, std::optional<int64_t> frames, bool strict_regions,
                       int segments) {
  PipelineOptions o = base_options(vf, backend, hwdec, device, inflight);
  o.segments = segments;  // checked by run_pipeline (std::invalid_argument: ValueError)
  o.input = src;
  o.output = dst;
  o.strict_regions = strict_regions;  // a regions file that cannot match the video: ValueError, not a warning
  o.start_seconds = start;  // checked by run_pipeline (std::invalid_argument: ValueError)
  o.duration_seconds = duration;
  o.max_frames = frames;
  o.encoder.codec = codec.empty() ? default_encoder_for(dst) : codec;
  o.encoder.crf = crf;
  o.encoder.preset = preset;
  o.overwrite = overwrite;

  // The callback runs on a pipeline thread: it takes the GIL, and an exception
  // it raises stops the run and is raised again here, as Ctrl-C does.
  PyCallback callback(std::move(progress));
  o.stop = &callback.stop;
  if (!callback.empty())
    o.progress = [&](const Progress& p) { callback.call([&] { return progress_dict(p); }); };
  RunStats stats;
  run_stoppable([&] { stats = run_pipeline(o); }, callback);
  return run_stats_dict(stats);
}

nb::list process_videos(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                        const std::string& vf, const std::string& codec, int crf, const std::string& preset,
                        const std::string& backend, const std::string& hwdec, int jobs_per_device,
                        const std::vector<int>& devices, int inflight, bool overwrite, nb::object progress,
                        int segments) {
  if (inputs.size() != outputs.size())
    throw std::invalid_argument("process_videos: " + std::to_string(inputs.size()) + " inputs but " +
                                std::to_string(outputs.size()) + " outputs");
  if (jobs_per_device < 1) throw std::invalid_argument("jobs must be at least 1");
  BatchOptions b;
  b.base = base_options(vf, backend, hwdec, 0, inflight);
  b.base.encoder.codec = codec;  // empty: default_encoder_for(each output)
  b.base.encoder.crf = crf;
  b.base.encoder.preset = preset;
  b.base.overwrite = overwrite;
  b.base.segments = segments;  // checked by each file's run (its error)
  for (size_t i = 0; i < inputs.size(); ++i) b.jobs.push_back({inputs[i], outputs[i]});
  b.jobs_per_device = jobs_per_device;
  for (int d : devices)
    if (d < 0) throw std::invalid_argument("devices: " + std::to_string(d) + " is not a CUDA device index");
  b.devices = devices;

  PyCallback callback(std::move(progress));
  b.stop = &callback.stop;
  if (!callback.empty())
    b.progress = [&](const BatchProgress& p) { callback.call([&] { return batch_progress_dict(p); }); };
  std::vector<BatchResult> results;
  run_stoppable([&] { results = run_batch(b); }, callback);
  nb::list out;
  const nb::object loads = nb::module_::import_("json").attr("loads");
  for (const BatchResult& r : results) out.append(loads(batch_result_json(r)));
  return out;
}

// ---- a segmented run in steps (streamblur.ray; detail/segment_tasks.hpp)

namespace {

// A job's options from the dict streamblur.ray passes to every step.
PipelineOptions job_options(const nb::dict& job) {
  const auto str = [&](const char* k) { return nb::cast<std::string>(job[k]); };
  PipelineOptions o = base_options(str("vf"), str("backend"), str("hwdec"), 0, nb::cast<int>(job["inflight"]));
  o.input = str("src");
  o.output = str("dst");
  o.encoder.codec = str("codec").empty() ? default_encoder_for(o.output) : str("codec");
  o.encoder.crf = nb::cast<int>(job["crf"]);
  o.encoder.preset = str("preset");
  o.overwrite = nb::cast<bool>(job["overwrite"]);
  o.segments = nb::cast<int>(job["segments"]);
  o.start_seconds = nb::cast<std::optional<double>>(job["start"]);
  o.duration_seconds = nb::cast<std::optional<double>>(job["duration"]);
  o.max_frames = nb::cast<std::optional<int64_t>>(job["frames"]);
  return o;
}

detail::SegmentPlan plan_of(const nb::dict& d) {
  detail::SegmentPlan p;
  for (nb::handle s : nb::cast<nb::list>(d["spans"])) {
    const nb::tuple t = nb::cast<nb::tuple>(s);
    p.spans.push_back({nb::cast<std::optional<int64_t>>(t[0]), nb::cast<std::optional<int64_t>>(t[1]),
                       nb::cast<int64_t>(t[2]), nb::cast<int64_t>(t[3])});
  }
  const nb::tuple c = nb::cast<nb::tuple>(d["copy"]);
  p.copy = {nb::cast<int64_t>(c[0]), nb::cast<int64_t>(c[1]), nb::cast<int64_t>(c[2])};
  p.one_because = nb::cast<std::string>(d["one_because"]);
  return p;
}

nb::dict plan_dict(const detail::SegmentPlan& p) {
  nb::list spans;
  for (const detail::PlannedSpan& s : p.spans) spans.append(nb::make_tuple(s.from_pts, s.until_pts, s.first_index, s.frames));
  nb::dict d;
  d["spans"] = spans;
  d["copy"] = nb::make_tuple(p.copy.start, p.copy.end, p.copy.shift);
  d["notes"] = p.notes;
  d["one_because"] = p.one_because;
  return d;
}

}  // namespace

nb::dict plan_segments(const nb::dict& job) {
  PipelineOptions o = job_options(job);
  detail::SegmentPlan plan;
  {
    nb::gil_scoped_release no_gil;
    plan = detail::plan_segments(o);
  }
  return plan_dict(plan);
}

nb::tuple run_segment(const nb::dict& job, const nb::dict& plan, std::size_t span, const std::string& spool) {
  PipelineOptions o = job_options(job);
  const detail::SegmentPlan p = plan_of(plan);
  PyCallback callback{nb::none()};
  o.stop = &callback.stop;
  detail::SpooledSpan s;
  run_stoppable([&] { s = detail::run_span_into(o, p, span, spool); }, callback);
  return nb::make_tuple(run_stats_dict(s.stats), nb::bytes(s.encoded.data(), s.encoded.size()));
}

nb::dict join_segments(const nb::dict& job, const nb::dict& plan, const std::vector<std::string>& spools,
                       const std::vector<int64_t>& frames, const std::vector<nb::bytes>& encoded) {
  const PipelineOptions o = job_options(job);
  const detail::SegmentPlan p = plan_of(plan);
  std::vector<std::string> params;
  for (const nb::bytes& b : encoded) params.emplace_back(static_cast<const char*>(b.data()), b.size());
  RunStats st;
  {
    nb::gil_scoped_release no_gil;
    st = detail::join_spooled(o, p, spools, frames, params);
  }
  return run_stats_dict(st);
}

}  // namespace streamblur::python
