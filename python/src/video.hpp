#pragma once
// The video calls: process_video and process_videos run the pipeline on a
// thread of their own, without the GIL, while the calling thread waits with
// Ctrl-C working; and what FrameStream shares with them (the options'
// checks, the statistics as a dict, the wait).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "streamblur/pipeline/pipeline.hpp"

namespace nb = nanobind;

namespace streamblur::python {

// Options shared by process_video, process_videos and frames; checked here so
// that a bad value is a ValueError before anything starts.
PipelineOptions base_options(const std::string& vf, const std::string& backend, const std::string& hwdec, int device,
                             int inflight);

// The run's statistics with the keys streamblur writes everywhere (stats_json.hpp).
nb::dict run_stats_dict(const RunStats& s);

// ---- waiting for the pipeline with Ctrl-C working
//
// Python runs its signal handlers (Ctrl-C: raise KeyboardInterrupt) only on
// the main thread, between bytecodes; a thread blocked in C++ never gets
// there. So every wait for a run polls PyErr_CheckSignals with the GIL, about
// 20 times a second, and gives the GIL back in between.
inline constexpr auto kSignalPoll = std::chrono::milliseconds(50);

// Waits, without the GIL, until ready() holds (checked under `mutex`; `cv` is
// notified when it may have changed), running Python's signal handlers every
// kSignalPoll. True once ready() holds; false as soon as a handler raised (the
// Python error, usually KeyboardInterrupt, is then set). GIL held on entry and
// exit. On threads other than the main one no handler runs: it just waits.
template <class Ready>
bool wait_or_signal(std::mutex& mutex, std::condition_variable& cv, Ready ready) {
  for (;;) {
    {
      nb::gil_scoped_release no_gil;
      std::unique_lock<std::mutex> lock(mutex);
      if (cv.wait_for(lock, kSignalPoll, ready)) return true;
    }
    if (PyErr_CheckSignals() != 0) return false;
  }
}

nb::dict process_video(const std::string& src, const std::string& dst, const std::string& vf, const std::string& codec,
                       int crf, const std::string& preset, const std::string& backend, const std::string& hwdec,
                       int device, bool overwrite, int inflight, nb::object progress, std::optional<double> start,
                       std::optional<double> duration, std::optional<int64_t> frames, bool strict_regions,
                       int segments);

nb::list process_videos(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                        const std::string& vf, const std::string& codec, int crf, const std::string& preset,
                        const std::string& backend, const std::string& hwdec, int jobs_per_device,
                        const std::vector<int>& devices, int inflight, bool overwrite, nb::object progress,
                        int segments);

// A segmented run in steps for streamblur.ray (detail/segment_tasks.hpp).
// `job`: the dict of options every step takes (src, dst, vf, codec, crf,
// preset, backend, hwdec, inflight, overwrite, segments, start, duration,
// frames); `plan`: what plan_segments returned.
nb::dict plan_segments(const nb::dict& job);
nb::tuple run_segment(const nb::dict& job, const nb::dict& plan, std::size_t span, const std::string& spool);
nb::dict join_segments(const nb::dict& job, const nb::dict& plan, const std::vector<std::string>& spools,
                       const std::vector<int64_t>& frames, const std::vector<nb::bytes>& encoded);

}  // namespace streamblur::python
