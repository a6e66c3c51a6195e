#pragma once
// The filter reference, generated from the filters' option tables (the
// registry of filter.hpp) and the region options, so the documentation
// cannot drift from the code: docs/filters.md is the output of
// `streamblur --help-filter all --format markdown`.
#include <string>

namespace streamblur {

// `name` ("all" for every filter) as Markdown: per filter its help and one
// table row per option (name, type, default, range, help), then the region
// options. "all" gives the whole page, with a title and an index; a single
// filter gives its section alone. Throws std::invalid_argument for an
// unknown name.
std::string filter_reference_markdown(const std::string& name = "all");

// `--help-filter all` as text: filter_help() of every filter, the region
// options once at the end.
std::string filter_reference_text();

}  // namespace streamblur
