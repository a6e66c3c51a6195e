// The registry: every filter and every option hook, in one place (as
// FFmpeg's allfilters.c). The parser and the chain (filter.cpp) know them
// only through these lists.
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/regions.hpp"

namespace streamblur {

// Defined in blur_filters.cpp.
std::vector<FilterInfo> make_blur_filters();

const std::vector<FilterInfo>& filter_registry() {
  static const std::vector<FilterInfo> registry = make_blur_filters();
  return registry;
}

const std::vector<OptionHook>& option_hooks() {
  static const std::vector<OptionHook> hooks = {region_option_hook()};
  return hooks;
}

}  // namespace streamblur
