#pragma once
// The frames a pipeline run hands to a frame sink, copied to the host: what a
// filter chain made of a clip, without an encoder in the way.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "streamblur/pipeline/pipeline.hpp"

namespace sbtest {

struct SinkFrames {
  streamblur::FrameLayout layout;                             // the processing format
  std::vector<std::array<std::vector<uint8_t>, 3>> planes;   // per frame, planes 0-2, rows packed
  int width(int p) const { return layout.planes[p].width; }
  int height(int p) const { return layout.planes[p].height; }
};

// Runs `chain` over the 8-bit 3-plane clip `in` on `backend`, the frames going
// to a host frame sink.
inline SinkFrames run_to_sink(const std::string& in, const std::string& chain, streamblur::BackendChoice backend) {
  SinkFrames f;
  streamblur::PipelineOptions o;
  o.input = in;
  o.filters = chain;
  o.backend = backend;
  o.sink_memory = streamblur::SinkMemory::Host;
  o.note = [](const std::string&) {};
  o.frame_sink = [&](const streamblur::FrameView& v) {
    f.layout = v.layout;
    std::array<std::vector<uint8_t>, 3> planes;
    for (int p = 0; p < 3; ++p) {
      const streamblur::AnyPlane& a = v.planes[p];
      for (int y = 0; y < a.height; ++y) {
        const auto* row = static_cast<const uint8_t*>(a.data) + y * a.pitch;
        planes[p].insert(planes[p].end(), row, row + a.width * a.channels);
      }
    }
    f.planes.push_back(std::move(planes));
  };
  streamblur::run_pipeline(o);
  return f;
}

}  // namespace sbtest
