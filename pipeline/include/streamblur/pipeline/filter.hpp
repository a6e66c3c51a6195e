#pragma once
// Filters: one small class each, created from a registry entry with an
// options table (as FFmpeg's AVOption tables), configured once per format,
// then applied plane by plane, in place, on the stream passed in.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "streamblur/pipeline/frame_layout.hpp"

namespace streamblur {

enum class Backend { Cpu, Cuda };
const char* backend_name(Backend b);

// A plane of either sample size, on the host (CPU backend) or the device (CUDA).
struct AnyPlane {
  void* data = nullptr;
  int width = 0, height = 0;
  std::ptrdiff_t pitch = 0;
  int channels = 1;
  int bytes_per_sample = 1;
};

// The frame being filtered, for filters that change over time (regions=FILE).
struct FrameContext {
  double pts_seconds = std::nan("");  // presentation time; NaN when unknown
  int64_t index = -1;                 // 0, 1, 2, ... in output order; -1 when unknown
};

// How far a filter reads around a sample and the grid its output is tied to,
// per plane, in that plane's pixels: run on a crop whose origin is a multiple
// of the grid and whose far edges are grid multiples (or the plane's edges),
// it gives what it gives on the whole plane for every pixel at least (x, y)
// from the crop's edges inside the plane. Region limits (regions.hpp) use it
// to filter only around the boxes.
struct FilterReach {
  int x = 0, y = 0;
  int grid_x = 1, grid_y = 1;
};

class Filter {
 public:
  virtual ~Filter() = default;
  // Set-up for one format and backend: per-plane parameters, device weights, scratch.
  virtual void configure(const FrameLayout& layout, Backend backend) = 0;
  // Whether apply() changes plane p (configure() first).
  virtual bool touches(int plane) const = 0;
  // In place. CUDA: enqueued on `stream`, no host sync. CPU: runs now, in parallel.
  virtual void apply(int plane, const AnyPlane& data, cudaStream_t stream) = 0;
  virtual std::string describe() const = 0;
  // Device memory the filter holds (weights, scratch) after configure().
  virtual std::size_t device_bytes() const { return 0; }
  // Called before the planes of each frame are applied.
  virtual void begin_frame(const FrameContext&) {}
  // See FilterReach (configure() first); nullopt: only the whole plane is right.
  virtual std::optional<FilterReach> reach(int /*plane*/) const { return std::nullopt; }
};

// ---- options table

enum class OptionType { Double, Int, Bool, Planes };

struct OptionSpec {
  std::string name;
  std::string help;
  OptionType type = OptionType::Double;
  double default_value = 0;
  double min = 0;
  double max = 0;
};

// Parsed values, every option present (defaults filled in). Planes are a
// component mask (PlaneComponent bits).
using OptionValues = std::map<std::string, double>;

struct FilterInfo {
  std::string name;
  std::string help;
  std::vector<OptionSpec> options;
  std::function<std::unique_ptr<Filter>(const OptionValues&)> create;
};

const std::vector<FilterInfo>& filter_registry();
const FilterInfo* find_filter(const std::string& name);

// `--help-filter NAME` text; throws std::invalid_argument for an unknown name.
std::string filter_help(const std::string& name);
// `--list-filters` text.
std::string filter_list();

struct RegionSpec;  // regions.hpp

struct FilterInstanceSpec {
  const FilterInfo* info = nullptr;
  OptionValues values;
  std::shared_ptr<const RegionSpec> regions;  // regions=/box=...: the filter limited to boxes; null: everywhere
};

// Parses "gblur=sigma=2:planes=y,boxblur=radius=3" (also positional values
// in table order: "gblur=2", "boxblur=3"). Throws std::invalid_argument with
// one clear line for an unknown filter or option, a bad or out-of-range value.
std::vector<FilterInstanceSpec> parse_filter_chain(const std::string& spec);

// A chain of filter instances, in place on every plane they touch.
class FilterChain {
 public:
  FilterChain() = default;
  explicit FilterChain(const std::vector<FilterInstanceSpec>& specs);
  void configure(const FrameLayout& layout, Backend backend);
  bool empty() const { return filters_.empty(); }
  // planes: one per layout plane, same memory space as the backend.
  void apply(const std::array<AnyPlane, 4>& planes, int num_planes, cudaStream_t stream,
             const FrameContext& frame = {});
  std::string describe() const;
  std::size_t device_bytes() const;

 private:
  std::vector<std::unique_ptr<Filter>> filters_;
  Backend backend_ = Backend::Cpu;
  int sample_shift_ = 0;  // filtered planes are rounded back to multiples of 1 << shift (P010)
};

}  // namespace streamblur
