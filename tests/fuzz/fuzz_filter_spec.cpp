// libFuzzer harness: the filter-chain parser. Any input either parses or
// throws std::invalid_argument with one line; anything else is a finding.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "streamblur/pipeline/filter.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  try {
    streamblur::parse_filter_chain(spec);
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    if (msg.empty() || msg.find('\n') != std::string::npos || msg.size() > 400) std::abort();  // not one short line
  }
  return 0;
}
