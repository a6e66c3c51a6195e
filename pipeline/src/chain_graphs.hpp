#pragma once
// The CUDA graphs of one FilterChain (FilterChain::set_graphs says when they
// are recorded and launched). Built with the CUDA backend only
// (chain_graphs.cpp): a chain makes them only when it is configured for
// Backend::Cuda.
#include <array>
#include <functional>
#include <memory>
#include <span>

#include "streamblur/pipeline/filter.hpp"

namespace streamblur::detail {

// The planes a call ran on: its graph's key.
struct GraphKey {
  std::array<AnyPlane, 4> src{}, dst{};  // src: apply_from's sources (empty for apply)
  int num_planes = 0;
  bool operator==(const GraphKey&) const = default;
};

std::shared_ptr<ChainGraphs> make_chain_graphs();

// Runs `work` for `planes` as one graph launch on `stream` where it can (see
// FilterChain::set_graphs); false: the caller runs the launches itself.
// device_bytes: the chain's device memory now (the graphs are dropped when it
// moves); stats counts what was recorded and launched.
bool launch_chain_graph(ChainGraphs& graphs, const GraphKey& key, std::span<const int> planes, const PlaneWork& work,
                        DeviceStream stream, std::size_t device_bytes, FilterChain::GraphStats& stats);

}  // namespace streamblur::detail
