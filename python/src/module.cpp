// streamblur._streamblur: the nanobind layer under the Python package.
//
// The package (streamblur/__init__.py) does the Python-side work (choosing and
// allocating the output in the input's framework, parsing stream objects,
// making numpy inputs pixel-contiguous); this layer checks every array again,
// works out where its memory lives (host, CUDA device, CUDA managed) and runs
// one FilterChain from the pipeline's filter registry over it, with the GIL
// released. Video: process_video / process_videos run run_pipeline / run_batch
// on a thread of their own, without the GIL, while the calling thread waits
// with Ctrl-C working (run_stoppable); FrameStream runs one pipeline with a
// frame sink on a thread of its own and hands each frame to Python as arrays
// that own a copy of it. Errors: std::invalid_argument -> ValueError
// (nanobind's default), CudaError and other std::runtime_error ->
// RuntimeError, bad dtype -> TypeError. The package checks the arguments'
// types and ranges first, so nanobind's own argument errors never reach users.
//
// This file only binds. The work is in arrays.cpp (the checks of every
// array), image_calls.cpp (run_filter on the CPU, the references), video.cpp
// and frame_stream.cpp; the CUDA side in cuda_memory.cpp, cuda_filter.cpp,
// cupy_path.cpp and cuda_frames.cpp, or no_cuda.cpp in a build without the
// CUDA toolkit (python/CMakeLists.txt).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

extern "C" {
#include <libavutil/log.h>
}

#include <exception>
#include <string>

#include "arrays.hpp"
#include "cuda_calls.hpp"
#include "cuda_memory.hpp"
#include "errors.hpp"
#include "frame_stream.hpp"
#include "image_calls.hpp"
#include "streamblur/io/av_error.hpp"
#include "streamblur/io/log.hpp"
#include "streamblur/io/output_file.hpp"
#include "streamblur/kernels/params.hpp"
#include "streamblur/pipeline/batch.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/pipeline.hpp"
#include "video.hpp"

using namespace nb::literals;

namespace streamblur::python {
namespace {

void register_error_translators() {
  // An output that exists without overwrite=True is Python's FileExistsError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const io::OutputExistsError& e) {
      PyErr_SetString(PyExc_FileExistsError, (std::string(e.what()) + " (pass overwrite=True to replace it)").c_str());
    } catch (const io::AVError& e) {
      set_located_error(e.what(), e.location());
    }
  });
  register_cuda_error_translator();  // cuda::CudaError, in CUDA builds
}

void bind_devices_and_memory(nb::module_& m) {
  m.def("device_count", &device_count, "Number of usable CUDA devices (0 without a driver or device).");
  m.def("current_device", &current_device, "The current CUDA device of the calling thread.");
  m.def("managed_bytes", &managed_bytes, "nbytes"_a);
  m.def("cuda_empty", &cuda_empty, "shape"_a, "bytes_per_sample"_a);
  m.def("is_managed_pointer", &is_managed_pointer, "ptr"_a);
  m.def("memory_kind", &memory_kind, "array"_a, "'host', 'cuda' or 'managed' (checks the array like the blurs do).");
  m.attr("MAX_MANAGED_BYTES") = kMaxManagedBytes;
}

void bind_image_calls(nb::module_& m) {
  m.def("run_filter", &run_filter, "src"_a, "dst"_a.none(), "spec"_a, "backend"_a, "stream"_a, "new_output"_a,
        "Runs filter chain `spec` from src into dst (same shape and dtype; dst may be src), or into "
        "new_output(memory kind of src) where dst is None; returns dst.");
  m.def("run_cupy", &run_cupy, "src"_a, "dst"_a, "spec"_a, "stream"_a.none(),
        "The fast path of run_filter for two CuPy arrays on CuPy's current stream; False where it does not apply "
        "(nothing was done).");
  m.def("register_cupy", &register_cupy, "ndarray"_a, "get_current_stream"_a, "uint8"_a, "uint16"_a,
        "Gives the fast path CuPy's array type, its current-stream function and numpy's uint8/uint16 dtypes.");
  m.def("check_chain", &check_chain, "spec"_a, "Parses a filter chain; returns its description.");
  m.def("filter_list", &filter_list);
  m.def("filter_help", &filter_help, "name"_a);
  m.def("reference_gaussian_blur", &reference_gaussian, "src"_a, "dst"_a, "sigma"_a, "radius"_a);
  m.def("reference_box_blur", &reference_box, "src"_a, "dst"_a, "radius"_a);
  m.def("release_queued_calls", &release_queued_calls, "wait"_a,
        "Drops the arrays held for calls whose GPU work has completed (wait=True: waits for all); returns how many "
        "calls still hold theirs.");
  m.def("cuda_cache_stats", &cuda_cache_stats,
        "Counts of CUDA chains configured and staging buffers allocated by the blurs since import.");
  m.attr("MIN_SIGMA") = kMinSigma;
  m.attr("MAX_SIGMA") = kMaxSigma;
  m.attr("MAX_GAUSS_RADIUS") = kMaxGaussRadius;
  m.attr("MAX_BOX_RADIUS") = kMaxBoxRadius;
}

void bind_video_calls(nb::module_& m) {
  m.def("process_video", &process_video, "src"_a, "dst"_a, "vf"_a, "codec"_a, "crf"_a, "preset"_a, "backend"_a,
        "hwdec"_a, "device"_a, "overwrite"_a, "inflight"_a, "progress"_a.none(), "start"_a.none(),
        "duration"_a.none(), "frames"_a.none(), "strict_regions"_a, "segments"_a);
  m.def("parse_time", &parse_time, "text"_a,
        "Seconds from ffmpeg's time syntax (12.5, 1500ms, [HH:]MM:SS[.m]); ValueError otherwise.");
  m.def("process_videos", &process_videos, "inputs"_a, "outputs"_a, "vf"_a, "codec"_a, "crf"_a, "preset"_a,
        "backend"_a, "hwdec"_a, "jobs_per_device"_a, "devices"_a, "inflight"_a, "overwrite"_a, "progress"_a.none(),
        "segments"_a);
  m.def("plan_segments", &plan_segments, "job"_a, "A segmented run's plan (streamblur.ray): spans, copy window, notes.");
  m.def("run_segment", &run_segment, "job"_a, "plan"_a, "span"_a, "spool"_a,
        "One span of a plan into a new spool file: (stats, encoder parameters as bytes).");
  m.def("join_segments", &join_segments, "job"_a, "plan"_a, "spools"_a, "frames"_a, "encoded"_a,
        "Joins the spans' spools into the job's output: the join's stats.");
  m.def("parse_device_list", &parse_device_list, "text"_a, "[] for 'all', else the listed device indices.");
  nb::class_<FrameStream>(m, "FrameStream",
                          "One pipeline run with a frame sink on a background thread (see streamblur.frames).")
      .def(nb::init<const std::string&, const std::string&, const std::string&, const std::string&, int, bool, int,
                    int, const std::string&, std::optional<double>, std::optional<double>, int>(),
           "path"_a, "vf"_a, "backend"_a, "hwdec"_a, "inflight"_a, "to_device"_a, "device"_a, "array_kind"_a,
           "format"_a, "start"_a.none(), "duration"_a.none(), "segments"_a)
      .def("next", &FrameStream::next,
           "(planes, pts_seconds, index, format, width, height); StopIteration at the end")
      .def("close", &FrameStream::close)
      .def("stats", &FrameStream::stats)
      .def("notes", &FrameStream::notes)
      .def_prop_ro("running", &FrameStream::running);
}

}  // namespace
}  // namespace streamblur::python

NB_MODULE(_streamblur, m) {
  using namespace streamblur;
  using namespace streamblur::python;
  m.doc() = "Low-level bindings of the streamblur C++/CUDA library; use the streamblur package instead.";
  register_error_translators();
  // FFmpeg's own log is quiet until set_log_level() asks for it; its last
  // error line is still kept for the messages.
  io::install_log_capture(AV_LOG_QUIET);
  m.def("set_log_level", &io::install_log_capture, "level"_a,
        "Prints FFmpeg's log lines at or below an AV_LOG_* level (-8: none) on stderr.");
  bind_devices_and_memory(m);
  bind_image_calls(m);
  bind_video_calls(m);
}
