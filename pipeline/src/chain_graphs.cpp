// The CUDA graphs of a FilterChain: the second call on the same planes
// records the chain's launches, each plane on a branch of its own, and later
// calls launch that graph (FilterChain::set_graphs).
#include "chain_graphs.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "streamblur/kernels/cuda_check.hpp"
#include "streamblur/kernels/cuda_raii.hpp"

namespace streamblur::detail {

struct ChainGraphs {
  struct Cached {
    GraphKey key;
    cuda::CudaGraphExec exec;  // empty until the second call (or for good, with direct)
    bool direct = false;       // recording failed or was not worth it: launch directly
    unsigned long long used = 0;
  };
  std::vector<Cached> graphs;
  unsigned long long clock = 0;
  std::size_t device_bytes = 0;              // the chain's device memory when `graphs` was filled
  int branch_device = -1;                    // where branch_streams live
  std::vector<cuda::CudaStream> branch_streams;  // planes 2, 3, 4 while recording
  std::vector<cuda::CudaEvent> branch_events;    // [0] the fork, then one join per branch

  // Drops what no longer fits: scratch reallocated (the graphs point at freed
  // memory), or another device.
  void drop_stale(std::size_t bytes, int device) {
    if (bytes == device_bytes && (branch_device < 0 || device == branch_device)) return;
    graphs.clear();
    branch_streams.clear();
    branch_events.clear();
    device_bytes = bytes;
    branch_device = -1;
  }
  cuda::CudaGraphExec record(std::span<const int> planes, const PlaneWork& work, cudaStream_t stream);
};

std::shared_ptr<ChainGraphs> make_chain_graphs() { return std::make_shared<ChainGraphs>(); }

bool launch_chain_graph(ChainGraphs& g, const GraphKey& key, std::span<const int> planes, const PlaneWork& work,
                        DeviceStream stream, std::size_t device_bytes, FilterChain::GraphStats& stats) {
  if (planes.empty()) return false;
  if (stream == nullptr || stream == cudaStreamLegacy) return false;  // the legacy stream cannot be captured
  auto find = [&] {
    return std::find_if(g.graphs.begin(), g.graphs.end(), [&](const ChainGraphs::Cached& c) { return c.key == key; });
  };
  // Planes whose work was found to be one launch run directly: nothing more
  // to check (the capture, device and scratch checks below cost a call's
  // host time three driver queries).
  if (const auto it = find(); it != g.graphs.end() && it->direct) {
    it->used = ++g.clock;
    return false;
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  if (status != cudaStreamCaptureStatusNone) return false;  // the caller's capture: our launches join its graph
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  g.drop_stale(device_bytes, device);
  ++g.clock;
  const auto it = find();
  if (it == g.graphs.end()) {  // first call on these planes: launch directly (it may allocate), remember them
    constexpr std::size_t kGraphs = 16;
    if (g.graphs.size() >= kGraphs)
      g.graphs.erase(std::min_element(g.graphs.begin(), g.graphs.end(),
                                      [](const auto& a, const auto& b) { return a.used < b.used; }));
    g.graphs.push_back(ChainGraphs::Cached{key, {}, false, g.clock});
    return false;
  }
  it->used = g.clock;
  if (it->direct) return false;
  if (!it->exec) {
    it->exec = g.record(planes, work, stream);
    if (!it->exec) {
      it->direct = true;
      return false;
    }
    g.branch_device = device;
    ++stats.recorded;
  }
  it->exec.launch(stream);
  ++stats.launched;
  return true;
}

// Records the planes' work into a graph: plane planes[0] on `stream`, every
// other on a branch stream forked from it and joined back. Empty when it
// cannot be recorded (an API that stream capture refuses) or is one launch.
cuda::CudaGraphExec ChainGraphs::record(std::span<const int> planes, const PlaneWork& work, cudaStream_t stream) {
  const std::size_t branches = planes.size() - 1;
  while (branch_streams.size() < branches) branch_streams.emplace_back();
  while (branch_events.size() < branches + 1) branch_events.emplace_back();
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  bool recorded = true;
  try {
    branch_events[0].record(stream);
    for (std::size_t b = 0; b < branches; ++b) {
      const cudaStream_t st = branch_streams[b].get();
      CUDA_CHECK(cudaStreamWaitEvent(st, branch_events[0].get(), 0));
      work(planes[b + 1], st);
      branch_events[b + 1].record(st);
    }
    work(planes[0], stream);
    for (std::size_t b = 0; b < branches; ++b) CUDA_CHECK(cudaStreamWaitEvent(stream, branch_events[b + 1].get(), 0));
  } catch (const std::exception&) {
    recorded = false;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  const std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> owned(graph, &cudaGraphDestroy);
  if (!recorded || ended != cudaSuccess || !graph) {
    (void)cudaGetLastError();
    branch_streams.clear();  // a branch may be left in the failed capture: never reuse it
    return {};
  }
  std::size_t nodes = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (nodes < 2) return {};  // one launch: a graph launch saves nothing
  return cuda::CudaGraphExec(graph);
}

}  // namespace streamblur::detail
