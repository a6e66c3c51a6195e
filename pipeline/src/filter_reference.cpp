// The filter reference (filter_reference.hpp): Markdown and text walked from
// the registry's option tables, as filter_help() walks them for one filter.
#include "streamblur/pipeline/filter_reference.hpp"

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/regions.hpp"

namespace streamblur {
namespace {

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Help text inside a Markdown table cell: '|' would end the cell, '<' would
// open an HTML tag, '*' could start emphasis.
std::string cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '*') out += "\\*";
    else out += c;
  }
  return out;
}

// A value in a code span inside a table cell (only '|' needs escaping there).
std::string code(const std::string& text) {
  std::string out = "`";
  for (const char c : text) {
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out + "`";
}

void filter_section(std::ostringstream& s, const FilterInfo& f) {
  std::string sentence = cell(f.help);  // the help as a sentence: capital first, full stop last
  if (!sentence.empty() && sentence[0] >= 'a' && sentence[0] <= 'z')
    sentence[0] = static_cast<char>(sentence[0] - 'a' + 'A');
  s << "## " << f.name << "\n\n" << sentence << ".\n\n";
  s << "| option | type | default | range | meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const OptionSpec& o : f.options) {
    std::string def, range;
    switch (o.type) {
      case OptionType::Planes: def = "all"; break;
      case OptionType::Bool: def = number(o.default_value); range = "0, 1"; break;
      default: def = number(o.default_value); range = number(o.min) + " to " + number(o.max); break;
    }
    const std::string names = code(o.name) + (o.alias.empty() ? "" : ", " + code(o.alias));
    s << "| " << names << " | " << option_type_name(o.type) << " | " << code(def) << " | " << range << " | "
      << cell(o.help) << (o.positional ? "" : " (by name only)") << " |\n";
  }
  s << "\n";
}

// The region options come as the text of region_options_help(): a title line,
// then "  NAME <VALUE>  HELP" with HELP ending in "(default D, range A to B)"
// or "(default D)" where there is one.
void region_section(std::ostringstream& s) {
  s << "## Region options\n\n"
    << "Every filter takes these as well; they limit it to boxes, given on every frame or per frame by a "
       "regions file. They go anywhere among the filter's own options. The file format and the blending are in "
       "[regions.md](regions.md).\n\n";
  s << "| option | value | default | range | meaning |\n| --- | --- | --- | --- | --- |\n";
  std::istringstream in(region_options_help());
  std::string line;
  std::getline(in, line);  // the title
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) != 0) continue;
    line = line.substr(2);
    const std::size_t name_end = line.find(' ');
    const std::size_t value_end = line.find("  ", name_end);
    if (name_end == std::string::npos || value_end == std::string::npos) continue;
    const std::string name = line.substr(0, name_end);
    std::string value = line.substr(name_end + 1, value_end - name_end - 1);
    if (value.size() >= 2 && value.front() == '<' && value.back() == '>') value = value.substr(1, value.size() - 2);
    std::string help = line.substr(value_end + 2), def, range;
    const std::size_t paren = help.rfind(" (default ");
    if (paren != std::string::npos && help.back() == ')') {
      std::string inside = help.substr(paren + 10, help.size() - paren - 11);
      help.erase(paren);
      const std::size_t comma = inside.find(", range ");
      if (comma != std::string::npos) {
        range = inside.substr(comma + 8);
        inside.erase(comma);
      }
      def = inside;
    }
    s << "| " << code(name) << " | " << code(value) << " | " << (def.empty() ? "" : code(def)) << " | " << range
      << " | " << cell(help) << " |\n";
  }
  s << "\n";
}

// What a chain written for FFmpeg means here. The distances are what
// python/tests/test_ffmpeg_compat.py measures and bounds.
void ffmpeg_section(std::ostringstream& s) {
  s << "## FFmpeg compatibility\n\n"
    << "`gblur`, `boxblur` and `unsharp` take FFmpeg's option names, short names and positional order, so a "
       "chain written for FFmpeg 5.1's `-vf` means the same here: `boxblur=2:1` is `luma_radius=2:luma_power=1`, "
       "`unsharp=5:5:1.0` a 5x5 luma matrix of amount 1, `gblur=2:3` sigma 2 with steps 3. streamblur's own "
       "options come after FFmpeg's and are taken only by name (`boxblur=radius=3`, `unsharp=sigma=2`); they and "
       "FFmpeg's options of the same filter exclude each other, and a spec mixing them is refused. FFmpeg's "
       "expressions (`boxblur=min(w\\,h)/10`) are not evaluated: a value must be a number.\n\n"
    << "- `boxblur` and `unsharp` compute what FFmpeg's do, within 45 dB PSNR of FFmpeg's output on every "
       "plane (FFmpeg rounds after each pass and mirrors the picture at its borders; streamblur rounds once and "
       "clamps).\n"
    << "- `gblur` is the exact Gaussian; FFmpeg's is an IIR approximation that comes closer with `steps`, which "
       "is accepted and changes nothing here. On a 320x240 `testsrc2` clip FFmpeg's output lies this far from "
       "the exact blur at sigma 2 (PSNR, dB, Y/U/V): steps=1 (its default) 42.0/39.5/36.6, steps=2 "
       "46.8/44.0/41.3, steps=4 50.9/47.9/45.0, steps=6 52.4/49.4/46.4 (FFmpeg 5.1).\n"
    << "- `pixelate` and the region options are streamblur's own (FFmpeg 5.1 has neither).\n\n";
}

}  // namespace

std::string filter_reference_markdown(const std::string& name) {
  std::ostringstream s;
  if (name != "all") {
    const FilterInfo* f = find_filter(name);
    if (!f) throw std::invalid_argument("unknown filter '" + name + "' (filters: " + filter_names() + ")");
    filter_section(s, *f);
    return s.str();
  }
  s << "# Filters\n\n"
    << "<!-- Generated from the filters' option tables by `streamblur --help-filter all --format markdown`; "
       "do not edit by hand (a test compares the two). -->\n\n"
    << "A chain is filters separated by `,`; each filter's options are `name=value` pairs separated by `:`, "
       "e.g. `--vf \"gblur=sigma=2:planes=y,boxblur=radius=3\"`. Values may also be given by position, in "
       "FFmpeg's order (`gblur=2`, `boxblur=3:1`), filling the options of the table in turn but for those marked "
       "by name only. Options left out take their default; a value outside its range is an error. "
       "`streamblur --help-filter NAME` prints the same as text.\n\n"
    << "| filter | what it does |\n| --- | --- |\n";
  for (const FilterInfo& f : filter_registry())
    s << "| [" << f.name << "](#" << f.name << ") | " << cell(f.help) << " |\n";
  s << "| [region options](#region-options) | limit any filter to boxes (faces, plates) |\n\n";
  ffmpeg_section(s);
  for (const FilterInfo& f : filter_registry()) filter_section(s, f);
  region_section(s);
  std::string out = s.str();
  out.pop_back();  // one newline at the end of the page
  return out;
}

std::string filter_reference_text() {
  const std::string regions = region_options_help();
  std::string out;
  for (const FilterInfo& f : filter_registry()) {
    std::string help = filter_help(f.name);
    if (help.size() >= regions.size() && help.compare(help.size() - regions.size(), regions.size(), regions) == 0)
      help.erase(help.size() - regions.size());
    out += help + "\n";
  }
  return out + regions;
}

}  // namespace streamblur
