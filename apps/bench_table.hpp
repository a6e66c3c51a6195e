#pragma once
// The one way streamblur-bench prints a report table: each column a title, a
// width and an alignment, the cells padded as printf's %Ns / %-Ns pads them,
// so that a header and its rows line up whatever the cells hold.
#include <string>
#include <utility>
#include <vector>

namespace streamblur::bench {

struct TableColumn {
  std::string title;
  int width = 0;           // at least this many characters (0: as wide as the cell)
  bool left = false;       // pad on the right (%-Ns) instead of the left (%Ns)
  std::string sep = " ";   // printed before the cell; not before the first column
};

class ReportTable {
 public:
  explicit ReportTable(std::vector<TableColumn> columns) : columns_(std::move(columns)) {}

  // The titles, one line.
  void print_header() const;
  // One line: cells[i] in column i. Fewer cells than columns end the line
  // early; `tail` is printed as it is after the last cell.
  void print_row(const std::vector<std::string>& cells, const std::string& tail = "") const;

 private:
  std::vector<TableColumn> columns_;
};

// printf into a string: how a table's cells are formatted.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace streamblur::bench
