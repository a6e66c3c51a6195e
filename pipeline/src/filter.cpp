// Filter registry, option parsing and the chain.
#include "streamblur/pipeline/filter.hpp"

#include "chain_graphs.hpp"
#include "streamblur/config.hpp"
#include "streamblur/kernels/cpu_blur.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "streamblur/kernels/cuda_blur.hpp"
#endif

extern "C" {
#include <libavutil/avstring.h>
#include <libavutil/mem.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>

namespace streamblur {

const char* backend_name(Backend b) { return b == Backend::Cuda ? "cuda" : "cpu"; }

const char* const kNoCudaBackend =
    "this streamblur was built without the CUDA backend (no CUDA toolkit at build time); only the cpu backend runs";

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// User text inside an error message: quoted, control characters and bytes
// that are not UTF-8 escaped (so the message stays one line; UTF-8 text is
// shown as it is), and shortened to about `max` bytes, of the original and of
// what is shown (escapes count), never inside a character, with its length
// said (a 100 KB spec, or 300 escaped bytes, are not echoed whole).
std::string quoted(const std::string& text, std::size_t max = 40) {
  std::string out = "'";
  std::size_t i = 0;
  while (i < text.size() && i < max && out.size() <= max) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const std::size_t n = chain_text::printable_length(text, i);
    if (c == '\\') out += "\\\\";
    else if (n > 0) out.append(text, i, n);
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
    i += n > 0 ? n : 1;
  }
  out += "'";
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// "all", "y", "uv", "yuva", "rgb", or an FFmpeg-style plane-index mask ("0x1", "15").
unsigned parse_planes(const std::string& filter, const std::string& text) {
  if (text == "all") return kCompY | kCompU | kCompV | kCompA | kCompRGB;
  unsigned mask = 0;
  bool letters = !text.empty();
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (text.compare(i, 3, "rgb") == 0) { mask |= kCompRGB; i += 2; continue; }
    if (c == 'y') mask |= kCompY;
    else if (c == 'u') mask |= kCompU;
    else if (c == 'v') mask |= kCompV;
    else if (c == 'a') mask |= kCompA;
    else { letters = false; break; }
  }
  if (letters) return mask;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 0);
  if (end == text.c_str() || *end != '\0' || v < 0 || v > 15)
    fail(filter + ": bad planes value " + quoted(text) + " (expected all, a subset of 'yuva', 'rgb', or a mask 0..15)");
  // plane-index mask as in FFmpeg: bit 0 = Y (or RGB), 1 = U, 2 = V, 3 = A
  mask = 0;
  if (v & 1) mask |= kCompY | kCompRGB;
  if (v & 2) mask |= kCompU;
  if (v & 4) mask |= kCompV;
  if (v & 8) mask |= kCompA;
  return mask;
}

double parse_value(const std::string& filter, const OptionSpec& o, const std::string& text) {
  if (o.type == OptionType::Planes) return parse_planes(filter, text);
  double v = 0;
  if (o.type == OptionType::Bool && (text == "true" || text == "false")) {
    v = text == "true";
  } else {
    char* end = nullptr;
    v = std::strtod(text.c_str(), &end);
    if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v))
      fail(filter + ": option '" + o.name + "' needs a number, got " + quoted(text));
  }
  if ((o.type == OptionType::Int || o.type == OptionType::Bool) && v != std::floor(v))
    fail(filter + ": option '" + o.name + "' needs a whole number, got " + quoted(text));
  if (v < o.min || v > o.max)
    fail(filter + ": option '" + o.name + "' value " + quoted(text) + " is out of range [" + format_number(o.min) + ", " +
         format_number(o.max) + "]");
  return v;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\n\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\n\r") - a + 1);
}

// The escaped form of byte or character `n` bytes long at text[at], for messages.
std::string escaped(const std::string& text, std::size_t at, std::size_t n) {
  std::string out;
  for (std::size_t k = at; k < at + n && k < text.size(); ++k) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[k]));
    out += buf;
  }
  return out;
}

// What the syntax cannot take. Control characters: FFmpeg's whitespace
// (" \n\t\r") is layout; any other (C0, DEL, C1) is refused, a NUL above all,
// which would end the text for FFmpeg and the OS (Chain('gblur=sigma=2\x00junk')
// ran as sigma=2; a regions path would be cut short). Quotes: av_get_token
// takes an unterminated quote to the end of the text; here it is a mistake.
void check_chain_text(const std::string& spec) {
  for (std::size_t i = 0; i < spec.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(spec[i]);
    const bool c0 = (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f;
    const bool c1 = c == 0xc2 && i + 1 < spec.size() && static_cast<unsigned char>(spec[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(spec[i + 1]) < 0xa0;
    if (c0 || c1)
      fail("filter chain " + quoted(spec) + " has a control character (" + escaped(spec, i, c1 ? 2 : 1) + ") at byte " +
           std::to_string(i + 1) + ": only text, spaces, tabs and line breaks are allowed");
  }
  for (std::size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == '\\') {
      ++i;  // the next character is taken as it is
    } else if (spec[i] == '\'') {
      const std::size_t close = spec.find('\'', i + 1);
      if (close == std::string::npos)
        fail("unterminated quote in filter chain " + quoted(spec) + ": the ' at byte " + std::to_string(i + 1) +
             " has no closing '");
      i = close;
    }
  }
}

}  // namespace

const char* option_type_name(OptionType t) {
  switch (t) {
    case OptionType::Double: return "float";
    case OptionType::Int: return "int";
    case OptionType::Bool: return "bool";
    case OptionType::Planes: return "planes";
  }
  return "";
}

const FilterInfo* find_filter(const std::string& name) {
  for (const FilterInfo& f : filter_registry())
    if (f.name == name) return &f;
  return nullptr;
}

std::string filter_names() {
  std::string out;
  for (const FilterInfo& f : filter_registry()) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

std::string option_names(const FilterInfo& info) {
  std::string out;
  for (const OptionSpec& o : info.options)
    out += (out.empty() ? "" : ", ") + o.name + (o.alias.empty() ? "" : " (or " + o.alias + ")");
  return out;
}

std::string filter_list() {
  std::ostringstream s;
  for (const FilterInfo& f : filter_registry()) s << "  " << f.name << "  " << f.help << "\n";
  return s.str();
}

std::string filter_help(const std::string& name) {
  const FilterInfo* f = find_filter(name);
  if (!f) fail("unknown filter " + quoted(name) + " (filters: " + filter_names() + ")");
  std::ostringstream s;
  s << f->name << ": " << f->help
    << "\nOptions (name=value, separated by ':'; values without a name fill the options in this order, but for "
       "those by name only):\n";
  for (const OptionSpec& o : f->options) {
    s << "  " << o.name << (o.alias.empty() ? "" : ", " + o.alias) << " <" << option_type_name(o.type) << ">  "
      << o.help;
    const std::string by_name = o.positional ? "" : "; by name only";
    if (o.type == OptionType::Planes) s << " (default all" << by_name << ")\n";
    else
      s << " (default " << format_number(o.default_value) << ", range " << format_number(o.min) << " to "
        << format_number(o.max) << by_name << ")\n";
  }
  for (const OptionHook& hook : option_hooks()) s << hook.help();
  return s.str();
}

namespace chain_text {

// FFmpeg's filtergraph tokenizer is av_get_token (libavutil/avstring.h): from
// *buf it skips whitespace, takes characters up to the first of `term` that is
// neither quoted ('...') nor escaped ('\'), undoes the quoting and escaping,
// drops the unquoted whitespace at the end, and leaves *buf at the terminator.
// split() stops where it stops (its scan, without its copy: av_get_token
// allocates the whole rest of the text per token, which on a long chain of
// many filters adds up); unquote() is av_get_token itself.
std::vector<std::string> split(const std::string& text, const char* separators) {
  std::vector<std::string> pieces;
  std::size_t start = 0, i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c != '\0' && std::strchr(separators, c) != nullptr) {
      pieces.push_back(text.substr(start, i - start));
      start = ++i;
    } else if (c == '\\') {
      i += i + 1 < text.size() ? 2 : 1;  // the next character as it is
    } else if (c == '\'') {
      const std::size_t close = text.find('\'', i + 1);  // no escapes inside quotes
      i = close == std::string::npos ? text.size() : close + 1;
    } else {
      ++i;
    }
  }
  pieces.push_back(text.substr(start));
  return pieces;
}

std::string unquote(const std::string& text) {
  const char* p = text.c_str();
  const std::unique_ptr<char, void (*)(void*)> token(av_get_token(&p, ""), &av_free);
  if (!token) throw std::bad_alloc();
  return token.get();
}

std::size_t printable_length(const std::string& text, std::size_t at) {
  const auto byte = [&](std::size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
  const unsigned c = byte(at);
  if (c < 0x80) return c >= 0x20 && c != 0x7f ? 1 : 0;
  const std::size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;  // 0x80..0xbf start nothing
  if (n == 0) return 0;
  unsigned code = c & (0x7fu >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned b = byte(at + k);
    if ((b & 0xc0) != 0x80) return 0;
    code = code << 6 | (b & 0x3f);
  }
  static constexpr unsigned kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
  if (code < kSmallest[n] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  if (code < 0xa0 || code == 0x2028 || code == 0x2029) return 0;  // C1 controls, line and paragraph separators
  return n;
}

}  // namespace chain_text

namespace {

// One filter of the chain: "name" or "name=options", trimmed, not empty.
FilterInstanceSpec parse_filter(const std::string& item) {
  const std::vector<std::string> parts = chain_text::split(item, "=");
  const std::string name = chain_text::unquote(parts[0]);
  const FilterInfo* info = find_filter(name);
  if (!info) fail("unknown filter " + quoted(name) + " (filters: " + filter_names() + ")");
  FilterInstanceSpec inst{info, {}, {}, {}};
  for (const OptionSpec& o : info->options) inst.values[o.name] = o.default_value;
  const bool has_options = parts.size() > 1;
  std::string options = has_options ? item.substr(parts[0].size() + 1) : "";
  for (const OptionHook& hook : option_hooks())
    if (auto d = hook.take(info->name, options)) inst.decorations.push_back(std::move(d));
  if (!has_options || (!inst.decorations.empty() && options.empty())) return inst;
  size_t position = 0;
  bool named_seen = false;
  for (const std::string& token : chain_text::split(options, ":")) {
    const std::vector<std::string> kv = chain_text::split(token, "=");
    const OptionSpec* opt = nullptr;
    std::string value;
    if (kv.size() == 1) {  // positional
      value = chain_text::unquote(token);
      if (named_seen) fail(info->name + ": positional value " + quoted(value) + " after a named option");
      while (position < info->options.size() && !info->options[position].positional) ++position;
      if (position >= info->options.size()) fail(info->name + ": too many values (" + quoted(value) + ")");
      opt = &info->options[position++];
    } else {
      named_seen = true;
      const std::string key = chain_text::unquote(kv[0]);
      value = chain_text::unquote(token.substr(kv[0].size() + 1));
      for (const OptionSpec& o : info->options)
        if (o.name == key || (!o.alias.empty() && o.alias == key)) opt = &o;
      if (!opt) fail(info->name + ": unknown option " + quoted(key) + " (its options: " + option_names(*info) + ")");
    }
    inst.given.insert(opt->name);  // given twice: the last value holds, as in FFmpeg
    inst.values[opt->name] = parse_value(info->name, *opt, value);
  }
  return inst;
}

}  // namespace

std::vector<FilterInstanceSpec> parse_filter_chain(const std::string& spec) {
  check_chain_text(spec);
  std::vector<FilterInstanceSpec> chain;
  if (trim(spec).empty()) return chain;
  for (const std::string& raw : chain_text::split(spec, ",")) {
    const std::string item = trim(raw);
    if (item.empty()) fail("empty filter in chain " + quoted(spec) + " (a ',' with nothing before or after it)");
    FilterInstanceSpec inst = parse_filter(item);
    inst.info->create(inst.values, inst.given);  // validates option combinations now, not at the first frame
    chain.push_back(std::move(inst));
  }
  return chain;
}

FilterChain::FilterChain(const std::vector<FilterInstanceSpec>& specs) {
  for (const FilterInstanceSpec& s : specs) {
    std::unique_ptr<Filter> f = s.info->create(s.values, s.given);
    for (const auto& d : s.decorations) f = d->wrap(std::move(f));
    filters_.push_back(std::move(f));
  }
}

void FilterChain::configure(const FrameLayout& layout, Backend backend) {
  if (!STREAMBLUR_HAVE_CUDA && backend == Backend::Cuda) throw std::runtime_error(kNoCudaBackend);
  backend_ = backend;
  std::vector<FilterCapabilities> caps;
  for (const auto& f : filters_) caps.push_back(f->capabilities(backend));
  auto all = [&](bool FilterCapabilities::*c) {
    return !caps.empty() && std::all_of(caps.begin(), caps.end(), [c](const FilterCapabilities& k) { return k.*c; });
  };
  const bool filters_shift = all(&FilterCapabilities::takes_sample_shift);
  sample_shift_ = filters_shift ? 0 : layout.sample_shift;
  FrameLayout given = layout;
  if (!filters_shift) given.sample_shift = 0;  // the planes are shifted down around them
  for (auto& f : filters_) f->configure(given, backend);
  graph_safe_ = backend == Backend::Cuda && all(&FilterCapabilities::graph_safe);
  filters_into_ = !caps.empty() && caps.front().filters_into;
  graphs_.reset();
}

void FilterChain::set_graphs(bool on) {
  graphs_on_ = on;
  graphs_.reset();
}

bool FilterChain::launch_graph(const detail::GraphKey& key, std::span<const int> planes,
                               const detail::PlaneWork& work, DeviceStream stream) {
#if STREAMBLUR_HAVE_CUDA
  if (!graphs_on_ || !graph_safe_) return false;
  if (!graphs_) graphs_ = detail::make_chain_graphs();
  return detail::launch_chain_graph(*graphs_, key, planes, work, stream, device_bytes(), graph_stats_);
#else
  (void)key, (void)planes, (void)work, (void)stream;
  return false;  // no CUDA backend: nothing runs on a device
#endif
}

// Formats with the value in the high bits (P010): the filters run on the
// plain values (shifted down, exact as the low bits are zero) so that each
// rounds once, to nearest, at the format's precision, and the low bits are
// zero again after the shift back up. (Blurring the 16-bit samples and then
// rounding to a multiple of 1 << shift rounds twice: about 1 sample in 128
// came out one step too high.)
static void shift_plane(Backend backend, const AnyPlane& a, int shift, DeviceStream stream) {
  const Plane<uint16_t> plane(static_cast<uint16_t*>(a.data), a.width, a.height, a.pitch, a.channels);
#if STREAMBLUR_HAVE_CUDA
  if (backend == Backend::Cuda) return cuda::shift_samples(plane, shift, stream);
#endif
  (void)backend, (void)stream;
  cpu::shift_samples(plane, shift);
}

void FilterChain::enqueue_plane(int p, const AnyPlane* src, const AnyPlane& dst, DeviceStream stream) {
  auto f = filters_.begin();
  if (src) (*f++)->apply_from(p, *src, dst, stream);  // apply_from: sample_shift_ == 0
  if (sample_shift_ != 0) shift_plane(backend_, dst, sample_shift_, stream);
  for (; f != filters_.end(); ++f)
    if ((*f)->touches(p)) (*f)->apply(p, dst, stream);
  if (sample_shift_ != 0) shift_plane(backend_, dst, -sample_shift_, stream);
}

void FilterChain::apply(const std::array<AnyPlane, 4>& planes, int num_planes, DeviceStream stream,
                        const FrameContext& frame) {
  for (auto& f : filters_) f->begin_frame(frame);
  std::array<int, 4> touched{};
  int n = 0;
  for (int p = 0; p < num_planes; ++p)
    if (std::any_of(filters_.begin(), filters_.end(), [p](const auto& f) { return f->touches(p); })) touched[n++] = p;
  detail::GraphKey key;
  key.dst = planes;
  key.num_planes = num_planes;
  const std::span<const int> list(touched.data(), static_cast<std::size_t>(n));
  if (launch_graph(key, list, [&](int p, DeviceStream st) { enqueue_plane(p, nullptr, planes[p], st); }, stream))
    return;
  if (sample_shift_ != 0)
    for (int p : list) shift_plane(backend_, planes[p], sample_shift_, stream);
  for (auto& f : filters_)
    for (int p = 0; p < num_planes; ++p)
      if (f->touches(p)) f->apply(p, planes[p], stream);
  if (sample_shift_ != 0)
    for (int p : list) shift_plane(backend_, planes[p], -sample_shift_, stream);
}

bool FilterChain::apply_from(const std::array<AnyPlane, 4>& src, const std::array<AnyPlane, 4>& dst, int num_planes,
                             DeviceStream stream) {
  if (filters_.empty() || sample_shift_ != 0 || !filters_into_) return false;
  for (int p = 0; p < num_planes; ++p)
    if (!filters_.front()->touches(p)) return false;  // an untouched plane would need a copy
  for (auto& f : filters_) f->begin_frame({});
  constexpr std::array<int, 4> kAll{0, 1, 2, 3};
  detail::GraphKey key;
  key.src = src;
  key.dst = dst;
  key.num_planes = num_planes;
  const std::span<const int> all(kAll.data(), static_cast<std::size_t>(num_planes));
  if (launch_graph(key, all, [&](int p, DeviceStream st) { enqueue_plane(p, &src[p], dst[p], st); }, stream))
    return true;
  for (int p = 0; p < num_planes; ++p) filters_.front()->apply_from(p, src[p], dst[p], stream);
  for (std::size_t i = 1; i < filters_.size(); ++i)
    for (int p = 0; p < num_planes; ++p)
      if (filters_[i]->touches(p)) filters_[i]->apply(p, dst[p], stream);
  return true;
}

std::size_t FilterChain::device_bytes() const {
  std::size_t n = 0;
  for (const auto& f : filters_) n += f->device_bytes();
  return n;
}

std::string FilterChain::describe() const {
  std::string s;
  for (const auto& f : filters_) {
    if (!s.empty()) s += ',';
    s += f->describe();
  }
  return s;
}

}  // namespace streamblur
