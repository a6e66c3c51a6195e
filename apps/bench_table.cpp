#include "bench_table.hpp"

#include <cstdarg>
#include <cstdio>
#include <stdexcept>

namespace streamblur::bench {

void ReportTable::print_header() const {
  std::vector<std::string> titles;
  for (const auto& c : columns_) titles.push_back(c.title);
  print_row(titles);
}

void ReportTable::print_row(const std::vector<std::string>& cells, const std::string& tail) const {
  if (cells.size() > columns_.size()) throw std::logic_error("report table: more cells than columns");
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    const TableColumn& c = columns_[i];
    if (i > 0) line += c.sep;
    const size_t pad = cells[i].size() < size_t(c.width) ? size_t(c.width) - cells[i].size() : 0;
    if (!c.left) line.append(pad, ' ');
    line += cells[i];
    if (c.left) line.append(pad, ' ');
  }
  line += tail;
  line += '\n';
  std::fputs(line.c_str(), stdout);
}

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string s(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, again);
  va_end(again);
  return s;
}

}  // namespace streamblur::bench
