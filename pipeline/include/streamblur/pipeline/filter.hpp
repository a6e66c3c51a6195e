#pragma once
// Filters: one small class each, created from a registry entry with an
// options table (as FFmpeg's AVOption tables), configured once per format,
// then applied plane by plane, in place, on the stream passed in.
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamblur/pipeline/device_stream.hpp"
#include "streamblur/pipeline/frame_layout.hpp"

namespace streamblur {

namespace detail {
struct ChainGraphs;  // chain_graphs.hpp
struct GraphKey;
using PlaneWork = std::function<void(int plane, DeviceStream stream)>;  // the chain's work on one plane
}  // namespace detail

// Where filters run; backend_name() gives "cpu" or "cuda".
enum class Backend { Cpu, Cuda };
const char* backend_name(Backend b);
// What asking for CUDA work says in a build without the CUDA backend
// (streamblur/config.hpp: STREAMBLUR_HAVE_CUDA 0).
extern const char* const kNoCudaBackend;

// A plane of either sample size, on the host (CPU backend) or the device (CUDA).
struct AnyPlane {
  void* data = nullptr;
  int width = 0, height = 0;
  std::ptrdiff_t pitch = 0;
  int channels = 1;
  int bytes_per_sample = 1;
  bool operator==(const AnyPlane&) const = default;
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

// What a filter can do besides filtering a plane in place, on a backend: the
// chain asks before it configures the filter, and plans around the answer.
struct FilterCapabilities {
  // apply_from() filters every plane the filter touches from a source plane
  // into a separate destination: CUDA blurs whose kernels read one plane and
  // write another, without the copy in and the scratch round trip that in
  // place costs.
  bool filters_into = false;
  // The CUDA work of apply()/apply_from() may be recorded once into a CUDA
  // graph and replayed: for the same planes it enqueues the same kernels with
  // the same arguments every frame (nothing that changes with begin_frame(),
  // no host copies, no allocation after the first call), and the work on one
  // plane reads and writes only that plane and state of its own for that
  // plane, so planes may run side by side.
  bool graph_safe = false;
  // The filter reads and writes samples whose value sits in their high bits
  // (FrameLayout::sample_shift, P010) itself when configure() is given such
  // a layout: it filters the values and writes its results shifted back up,
  // low bits zero, as it would write them after the chain shifted the planes
  // down and before it shifted them back. Where every filter of a chain
  // does, the chain skips those two passes per plane (and may filter from a
  // source plane into another, apply_from()); else it configures the filters
  // with no shift and shifts around them.
  bool takes_sample_shift = false;
};

// The interface every filter implements (see the top of this file).
class Filter {
 public:
  virtual ~Filter() = default;
  // Set-up for one format and backend: per-plane parameters, device weights, scratch.
  virtual void configure(const FrameLayout& layout, Backend backend) = 0;
  // Whether apply() changes plane p (configure() first).
  virtual bool touches(int plane) const = 0;
  // In place. CUDA: enqueued on `stream`, no host sync. CPU: runs now, in parallel.
  virtual void apply(int plane, const AnyPlane& data, DeviceStream stream) = 0;
  virtual std::string describe() const = 0;
  // Device memory the filter holds (weights, scratch) after configure().
  virtual std::size_t device_bytes() const { return 0; }
  // Called before the planes of each frame are applied.
  virtual void begin_frame(const FrameContext&) {}
  // See FilterReach (configure() first); nullopt: only the whole plane is right.
  virtual std::optional<FilterReach> reach(int /*plane*/) const { return std::nullopt; }
  // src and dst: same shape, memory that does not overlap. Only where
  // capabilities().filters_into; enqueued on `stream`.
  virtual void apply_from(int /*plane*/, const AnyPlane& /*src*/, const AnyPlane& /*dst*/, DeviceStream /*stream*/) {}
  // See FilterCapabilities; none by default.
  virtual FilterCapabilities capabilities(Backend /*backend*/) const { return {}; }
};

// ---- options table
//
// Each filter has an options struct, and each row of its table (name, help,
// type, default, range, as FFmpeg's AVOption rows) binds one field of it by
// pointer to member, as FFmpeg's OFFSET() does:
//
//   struct BoxblurOptions { int radius; };
//   FilterInfo::make<BoxblurOptions>("boxblur", "...",
//       {OptionSpec::bind(&BoxblurOptions::radius, "radius", "window radius", 2, 0, 100)},
//       [](const BoxblurOptions& o) { return std::make_unique<BoxFilter>(o); });
//
// The parser fills the struct from the text (defaults first, then what the
// user gave, range-checked), and the filter is built from the struct: a field
// that does not exist, or a row bound to another filter's struct, does not
// compile. The option's type comes from the field's: double, int, bool or
// PlaneMask.

// The type of an option's value (from its field's type).
enum class OptionType { Double, Int, Bool, Planes };
// How help texts name a type: "float", "int", "bool", "planes".
const char* option_type_name(OptionType t);

// The value of a `planes` option: the components a filter touches (PlaneComponent bits).
struct PlaneMask {
  unsigned bits = 0;
};

template <class Options>
struct OptionRow;

// One row of a filter's options table: name, help, type, default, range;
// as in FFmpeg's tables a second, short name (alias: "lr" for luma_radius),
// and whether a value without a name may fill it (positional; FFmpeg's
// shorthand takes the rows in table order, aliases once).
struct OptionSpec {
  std::string name;
  std::string help;
  OptionType type = OptionType::Double;
  double default_value = 0;
  double min = 0;
  double max = 0;
  // Stores a parsed, range-checked value into the bound field of the
  // filter's options struct (type-erased; FilterInfo::make pairs it with the
  // struct it was bound to).
  std::function<void(void* options, double value)> store;
  std::string alias;        // "" for none
  bool positional = true;   // false: only by name (streamblur's options after FFmpeg's)

  // A row bound to `field` of Options. Options is deduced from the pointer;
  // name it (bind<GblurOptions, bool>(&GblurOptions::fields, ...)) for a
  // field inherited from a base struct.
  template <class Options, class Field>
  static OptionRow<Options> bind(Field Options::*field, std::string name, std::string help, double default_value,
                                 double min, double max);
};

// An OptionSpec known to bind a field of Options (so one table cannot mix structs).
template <class Options>
struct OptionRow {
  OptionSpec spec;
  // The row with FFmpeg's short name as well ("lr").
  OptionRow alias(std::string short_name) && {
    spec.alias = std::move(short_name);
    return std::move(*this);
  }
  // The row taken only by name, never by position.
  OptionRow named_only() && {
    spec.positional = false;
    return std::move(*this);
  }
};

// The names of the options a filter's text gave (by name, alias or
// position), by their row names: what an options struct with a member
// `std::set<std::string> given` receives, for options whose meaning
// depends on which others were given.
using GivenOptions = std::set<std::string>;

// The OptionType of an options-struct field of type Field.
template <class Field>
constexpr OptionType option_type_of() {
  if constexpr (std::is_same_v<Field, double>) return OptionType::Double;
  else if constexpr (std::is_same_v<Field, int>) return OptionType::Int;
  else if constexpr (std::is_same_v<Field, bool>) return OptionType::Bool;
  else {
    static_assert(std::is_same_v<Field, PlaneMask>, "an option field is a double, int, bool or PlaneMask");
    return OptionType::Planes;
  }
}

template <class Options, class Field>
OptionRow<Options> OptionSpec::bind(Field Options::*field, std::string name, std::string help, double default_value,
                                    double min, double max) {
  OptionSpec s{std::move(name), std::move(help), option_type_of<Field>(), default_value, min, max, {}, {}, true};
  s.store = [field](void* options, double v) {
    Field& f = static_cast<Options*>(options)->*field;
    if constexpr (std::is_same_v<Field, PlaneMask>) f.bits = static_cast<unsigned>(v);
    else if constexpr (std::is_same_v<Field, bool>) f = v != 0;
    else f = static_cast<Field>(v);  // int: the parser has checked it is whole and in range
  };
  return {std::move(s)};
}

// Parsed values by option name, every option present (defaults filled in),
// as numbers (a planes value is its component mask). What the user asked
// for, for messages and tests; filters are built from their options struct.
using OptionValues = std::map<std::string, double>;

// A registry entry: the filter's name, help, options table and factory.
struct FilterInfo {
  std::string name;
  std::string help;
  std::vector<OptionSpec> options;
  // Builds the filter: fills its options struct from `values` through the
  // rows' bindings (a value missing from `values` takes the row's default),
  // and its `given` member, where it has one, from `given`.
  std::function<std::unique_ptr<Filter>(const OptionValues&, const GivenOptions&)> create;

  // The registry entry of a filter built from an Options struct by `make`
  // (a callable taking const Options&).
  template <class Options, class Make>
  static FilterInfo make(std::string name, std::string help, std::vector<OptionRow<Options>> rows, Make make) {
    FilterInfo info{std::move(name), std::move(help), {}, {}};
    for (OptionRow<Options>& r : rows) info.options.push_back(std::move(r.spec));
    info.create = [specs = info.options, make = std::move(make)](
                      const OptionValues& values, const GivenOptions& given) -> std::unique_ptr<Filter> {
      Options o{};
      for (const OptionSpec& s : specs) {
        const auto it = values.find(s.name);
        s.store(&o, it == values.end() ? s.default_value : it->second);
      }
      if constexpr (requires { o.given; }) o.given = given;
      return make(static_cast<const Options&>(o));
    };
    return info;
  }
};

// Every registered filter (registry.cpp); find_filter() gives one by name
// (nullptr when unknown).
const std::vector<FilterInfo>& filter_registry();
const FilterInfo* find_filter(const std::string& name);

// `--help-filter NAME` text; throws std::invalid_argument for an unknown name.
std::string filter_help(const std::string& name);
// `--list-filters` text.
std::string filter_list();
// "gblur, boxblur, ...": the registered filters' names, for messages.
std::string filter_names();
// "sigma, steps (or s), ...": a filter's option names, for messages.
std::string option_names(const FilterInfo& info);

// What an option hook makes of its options: a wrapper around the filter
// (regions.hpp: the filter limited to boxes).
class FilterDecoration {
 public:
  virtual ~FilterDecoration() = default;
  virtual std::unique_ptr<Filter> wrap(std::unique_ptr<Filter> inner) const = 0;
};

// Options that every filter takes besides its own table (regions=, box=,
// ...), as FFmpeg's timeline option enable= is: the parser gives each hook
// the option text first, and the filter's table sees what is left.
struct OptionHook {
  // Takes the hook's options out of `options` ("sigma=12:box=0:0:8:8" ->
  // "sigma=12") and returns what they make, or null (options untouched)
  // when there are none. Throws std::invalid_argument with one clear line.
  std::function<std::shared_ptr<const FilterDecoration>(const std::string& filter, std::string& options)> take;
  // The hook's part of filter_help(), after the filter's own options.
  std::function<std::string()> help;
};

// Every registered option hook (registry.cpp).
const std::vector<OptionHook>& option_hooks();

// One filter of a parsed chain: its entry, its values and what option hooks
// made of their options, innermost first.
struct FilterInstanceSpec {
  const FilterInfo* info = nullptr;
  OptionValues values;
  GivenOptions given;  // the options the text named or filled by position
  std::vector<std::shared_ptr<const FilterDecoration>> decorations;
};

// Parses "gblur=sigma=2:planes=y,boxblur=radius=3" (also positional values
// in table order: "gblur=2", "boxblur=3"). Throws std::invalid_argument with
// one clear line for an unknown filter or option, a bad or out-of-range value,
// a control character or NUL anywhere in the text, or an unterminated quote.
//
// Quoting and escaping follow FFmpeg's filtergraphs (av_get_token): '\' takes
// the next character as it is, '...' takes a span as it is (no escapes inside),
// spaces, tabs and line breaks around names and values are dropped. One level
// serves both separators, the chain's ',' and the options' ':' and '=':
//   gblur=regions=dir\:x/faces.jsonl      gblur=regions='a,b:c.jsonl',boxblur=2
// (FFmpeg undoes one level of quoting per level, so there a ':' inside a value
// is escaped twice; here once.)
std::vector<FilterInstanceSpec> parse_filter_chain(const std::string& spec);

// The chain's text syntax, shared by the parser and the region options
// (regions.hpp); the text holds no NUL (parse_filter_chain checks first).
namespace chain_text {
// The pieces of `text` between those characters of `separators` that are
// neither quoted nor escaped, as written (quotes and escapes kept).
std::vector<std::string> split(const std::string& text, const char* separators);
// `text` with its quotes and escapes undone and the unquoted, unescaped
// whitespace at both ends dropped (av_get_token with no terminator).
std::string unquote(const std::string& text);
// For messages: the length of the printable UTF-8 character at text[at]
// (2 to 4 bytes, or 1 for printable ASCII); 0 for a control character
// (C0, DEL, C1), U+2028 and U+2029 (they break lines), or a byte that starts
// no well-formed UTF-8 sequence (overlong forms and surrogates included),
// which messages show escaped.
std::size_t printable_length(const std::string& text, std::size_t at);
}  // namespace chain_text

// A chain of filter instances, in place on every plane they touch.
class FilterChain {
 public:
  FilterChain() = default;
  explicit FilterChain(const std::vector<FilterInstanceSpec>& specs);
  // Configures every filter (Filter::configure) for this format and backend.
  void configure(const FrameLayout& layout, Backend backend);
  bool empty() const { return filters_.empty(); }
  // planes: one per layout plane, same memory space as the backend.
  void apply(const std::array<AnyPlane, 4>& planes, int num_planes, DeviceStream stream,
             const FrameContext& frame = {});
  // The chain from src into dst (separate memory, same shapes), where its
  // first filter writes every plane of dst from src (FilterCapabilities::filters_into)
  // and the rest run in place on dst. Returns false, having done nothing,
  // where that is not so; the caller then copies and calls apply().
  bool apply_from(const std::array<AnyPlane, 4>& src, const std::array<AnyPlane, 4>& dst, int num_planes,
                  DeviceStream stream);
  std::string describe() const;
  std::size_t device_bytes() const;

  // CUDA graphs (CUDA backend, on by default). Where every filter is
  // graph_safe (FilterCapabilities), the second call of apply() or apply_from() on the same
  // planes (addresses, shapes) records the chain's launches into a CUDA graph,
  // each plane on a branch of its own, and later calls on those planes launch
  // that graph: one launch per frame, with the chroma planes running beside
  // luma rather than after it. The first call runs the launches directly
  // (it may allocate), as do calls on the legacy default stream, calls inside
  // the caller's own stream capture (the launches join the caller's graph),
  // and chains of a single launch. Graphs are kept for the last 16 sets of
  // planes; they are dropped when a filter's device memory moves. Like the
  // filters' scratch, they belong to the chain: one thread at a time, its
  // calls' GPU work ordered one after another (the pipeline has a chain per
  // frame slot; the Python module locks each cached chain for a call and
  // orders its calls with an event).
  void set_graphs(bool on);
  struct GraphStats {
    long long recorded = 0;  // graphs instantiated
    long long launched = 0;  // calls that ran as one graph launch
  };
  GraphStats graph_stats() const { return graph_stats_; }

 private:
  // Runs `work` (the chain on each of `planes`) as one launch of the chain's
  // CUDA graph for these planes where it can (see set_graphs); false: the
  // caller runs the launches itself.
  bool launch_graph(const detail::GraphKey& key, std::span<const int> planes, const detail::PlaneWork& work,
                    DeviceStream stream);
  // The chain on one plane, in order (the P010 shifts included).
  void enqueue_plane(int p, const AnyPlane* src, const AnyPlane& dst, DeviceStream stream);

  std::vector<std::unique_ptr<Filter>> filters_;
  Backend backend_ = Backend::Cpu;
  // The shift the chain takes off the planes and puts back around its
  // filters (P010), where they do not take it themselves (FilterCapabilities).
  int sample_shift_ = 0;
  bool graphs_on_ = true;
  bool graph_safe_ = false;  // every filter graph_safe, on the CUDA backend
  bool filters_into_ = false;  // the first filter's filters_into
  // The recorded graphs (chain_graphs.hpp; CUDA backend only). Shared, not
  // unique, so that this header needs no complete type: one chain owns them.
  std::shared_ptr<detail::ChainGraphs> graphs_;
  GraphStats graph_stats_;
};

}  // namespace streamblur
