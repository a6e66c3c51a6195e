#include "streamblur/io/detail/temp_outputs.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace streamblur::io {
namespace {

constexpr int kSlots = 256;          // pipelines writing at once in one process
constexpr std::size_t kPathMax = 4096;

// A slot is Free, being Filled by register_temp_output, or Ready for the handler.
enum SlotState : int { kFree = 0, kFilling = 1, kReady = 2 };
static_assert(std::atomic<int>::is_always_lock_free, "signal handlers need lock-free atomics");

std::atomic<int> g_state[kSlots];
char g_path[kSlots][kPathMax];
bool g_directory[kSlots];

// Unlinks the entries of a folder and the folder itself with raw system calls
// only (opendir/readdir may allocate, which a signal handler must not).
void remove_folder_in_signal_handler(const char* path) noexcept {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
        unsigned short reclen;
        std::memcpy(&reclen, buf + off + 16, sizeof reclen);
        const char* name = buf + off + 19;
        if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) ::unlinkat(fd, name, 0);
        off += reclen;
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

}  // namespace

int register_temp_output(const std::string& path, bool directory) noexcept {
  if (path.empty() || path.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_state[i].compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_path[i], path.c_str(), path.size() + 1);
    g_directory[i] = directory;
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
    if (g_state[i].load() == kReady) {
      if (g_directory[i]) remove_folder_in_signal_handler(g_path[i]);
      else ::unlink(g_path[i]);
    }
}

}  // namespace streamblur::io
