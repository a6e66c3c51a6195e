#include "streamblur/pipeline/temp_outputs.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace streamblur {
namespace {

constexpr int kSlots = 256;          // pipelines writing at once in one process
constexpr std::size_t kPathMax = 4096;

// A slot is Free, being Filled by register_temp_output, or Ready for the handler.
enum SlotState : int { kFree = 0, kFilling = 1, kReady = 2 };
static_assert(std::atomic<int>::is_always_lock_free, "signal handlers need lock-free atomics");

std::atomic<int> g_state[kSlots];
char g_path[kSlots][kPathMax];

}  // namespace

int register_temp_output(const std::string& path) noexcept {
  if (path.empty() || path.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_state[i].compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_path[i], path.c_str(), path.size() + 1);
    g_state[i].store(kReady);
    return i;
  }
  return -1;
}

void unregister_temp_output(int slot) noexcept {
  if (slot >= 0 && slot < kSlots) g_state[slot].store(kFree);
}

void remove_temp_outputs_in_signal_handler() noexcept {
  for (int i = 0; i < kSlots; ++i)
    if (g_state[i].load() == kReady) ::unlink(g_path[i]);
}

}  // namespace streamblur
