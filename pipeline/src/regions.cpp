// Region limits for any filter (see regions.hpp): the regions file, the
// option peeling for the chain parser, and the filter wrapper that runs the
// inner filter on a crop around the boxes and blends it back by the mask.
#include "streamblur/pipeline/regions.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "streamblur/config.hpp"
#if STREAMBLUR_HAVE_CUDA
#include "region_blend_cuda.hpp"
#endif

namespace streamblur {
namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// User text in a message: printable text (UTF-8) kept, control characters
// and bytes that are not UTF-8 escaped, cut (never inside a character) so that
// what is shown (escapes included) stays within `max` bytes plus "...", so
// every message stays one short line whatever bytes a path or value holds.
std::string shown(const std::string& text, std::size_t max = 60) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = chain_text::printable_length(text, i);
    char buf[8] = {};
    if (n == 0) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[i]));
    const std::string piece = n > 0 ? text.substr(i, n) : std::string(buf);
    if (out.size() + piece.size() > max) return out + "...";
    out += piece;
    i += n > 0 ? n : 1;
  }
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

// What is wrong with a box's size, or "" when w and h are both above 0.
std::string size_problem(double w, double h) {
  if (w < 0 || h < 0) return "a negative size";
  if (!(w > 0) && !(h > 0)) return "zero width and height";
  if (!(w > 0)) return "zero width";
  if (!(h > 0)) return "zero height";
  return "";
}

std::string size_message(const std::string& which, const LabeledBox& b) {
  return which + " has " + size_problem(b.w, b.h) + " (w=" + number(b.w) + ", h=" + number(b.h) +
         "); w and h must be more than 0";
}

std::string box_text(const LabeledBox& b) {
  std::ostringstream s;
  s << "[" << b.x << ", " << b.y << ", " << b.w << ", " << b.h;
  if (!b.label.empty()) s << ", \"" << shown(b.label, 30) << "\"";
  s << "]";
  return s.str();
}

// ---- the regions file

class FileError {
 public:
  FileError(const std::string& name, int line)
      : prefix_("regions file '" + shown(name, 120) + "', line " + std::to_string(line) + ": ") {}
  [[noreturn]] void operator()(const std::string& msg) const { fail(prefix_ + msg); }

 private:
  std::string prefix_;
};

LabeledBox parse_box(const nlohmann::json& j, std::size_t index, int line, const FileError& error) {
  const std::string which = "box " + std::to_string(index + 1);
  if (!j.is_array() || j.size() < 4 || j.size() > 5)
    error(which + " must be [x, y, w, h] or [x, y, w, h, \"label\"], got " + shown(j.dump(), 60));
  LabeledBox b;
  b.line = line;
  double* fields[4] = {&b.x, &b.y, &b.w, &b.h};
  for (int i = 0; i < 4; ++i) {
    if (!j[i].is_number()) error(which + ": x, y, w and h must be numbers, got " + shown(j.dump(), 60));
    *fields[i] = j[i].get<double>();
    if (!std::isfinite(*fields[i])) error(which + ": x, y, w and h must be finite numbers");
  }
  if (j.size() == 5) {
    if (!j[4].is_string()) error(which + ": the fifth value (the label) must be a string, got " + shown(j[4].dump(), 40));
    b.label = j[4].get<std::string>();
  }
  if (!size_problem(b.w, b.h).empty()) error(size_message(which, b));  // zero-size boxes too, as box= refuses them
  return b;
}

LabeledBox lerp(const LabeledBox& a, const LabeledBox& b, double u) {
  LabeledBox r = a;
  r.x = a.x + u * (b.x - a.x);
  r.y = a.y + u * (b.y - a.y);
  r.w = a.w + u * (b.w - a.w);
  r.h = a.h + u * (b.h - a.h);
  return r;
}

// The boxes a fraction u of the way from keyframe A to keyframe B: labelled
// boxes paired by label, unlabelled ones by order; unpaired boxes stay put.
std::vector<LabeledBox> between(const std::vector<LabeledBox>& A, const std::vector<LabeledBox>& B, double u) {
  std::vector<LabeledBox> out;
  std::vector<bool> used(B.size(), false);
  std::vector<std::size_t> unlabelled_b;
  for (std::size_t j = 0; j < B.size(); ++j)
    if (B[j].label.empty()) unlabelled_b.push_back(j);
  std::size_t next_unlabelled = 0;
  for (const LabeledBox& a : A) {
    std::optional<std::size_t> partner;
    if (!a.label.empty()) {
      for (std::size_t j = 0; j < B.size(); ++j)
        if (B[j].label == a.label) partner = j;
    } else if (next_unlabelled < unlabelled_b.size()) {
      partner = unlabelled_b[next_unlabelled++];
    }
    if (partner) {
      used[*partner] = true;
      out.push_back(lerp(a, B[*partner], u));
    } else {
      out.push_back(a);
    }
  }
  for (std::size_t j = 0; j < B.size(); ++j)
    if (!used[j]) out.push_back(B[j]);
  return out;
}

}  // namespace

namespace {

// A JSON error of nlohmann's in the library's words, without its
// "[json.exception.parse_error.101]" tag.
std::string json_reason(const nlohmann::json::exception& e) {
  std::string what = e.what();
  const std::size_t at = what.find("] ");
  if (what.rfind("[json.exception", 0) == 0 && at != std::string::npos) what = what.substr(at + 2);
  if (dynamic_cast<const nlohmann::json::out_of_range*>(&e) && e.id == 406) {  // "number overflow parsing '1e400'"
    const std::size_t q0 = what.find('\''), q1 = what.rfind('\'');
    const std::string n = q0 != std::string::npos && q1 > q0 ? what.substr(q0 + 1, q1 - q0 - 1) : what;
    return "number " + shown(n, 40) + " is out of range (a number here must be within about 1.8e308)";
  }
  return "malformed JSON: " + shown(what, 160);
}

// One line's keyframe, after `before` (the file's keyframes so far, keyed by `key`).
RegionTrack::Keyframe parse_keyframe(const nlohmann::json& j, const std::vector<RegionTrack::Keyframe>& before,
                                     RegionTrack::Key& key_of_file, int line, const FileError& error) {
  using Key = RegionTrack::Key;
  if (!j.is_object()) error("expected a JSON object such as {\"frame\": 0, \"boxes\": [[x, y, w, h]]}");
  const bool has_frame = j.contains("frame"), has_pts = j.contains("pts");
  if (!has_frame && !has_pts) error("needs \"frame\" (index from 0) or \"pts\" (seconds)");
  if (before.empty()) key_of_file = has_frame ? Key::Frame : Key::Pts;
  const char* key = key_of_file == Key::Frame ? "frame" : "pts";
  if (!j.contains(key))
    error(std::string("has no \"") + key + "\"; the file's keyframes are keyed by \"" + key + "\" (from line " +
          std::to_string(before.front().line) + ")");
  const nlohmann::json& k = j[key];
  RegionTrack::Keyframe f;
  f.line = line;
  if (key_of_file == Key::Frame) {
    if (!k.is_number_integer() || k.get<int64_t>() < 0)
      error("\"frame\" must be a whole number from 0, got " + shown(k.dump(), 40));
    f.at = static_cast<double>(k.get<int64_t>());
  } else {
    if (!k.is_number() || !std::isfinite(k.get<double>()))
      error("\"pts\" must be a number of seconds, got " + shown(k.dump(), 40));
    f.at = k.get<double>();
  }
  if (!before.empty() && !(f.at > before.back().at))
    error(std::string(key) + " " + number(f.at) + " is not after " + key + " " + number(before.back().at) + " (line " +
          std::to_string(before.back().line) + "); keyframes must be in increasing order");
  if (!j.contains("boxes")) error("no \"boxes\" (a list of [x, y, w, h] or [x, y, w, h, \"label\"])");
  const nlohmann::json& boxes = j["boxes"];
  if (!boxes.is_array()) error("\"boxes\" must be a list, got " + shown(boxes.dump(), 40));
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    LabeledBox b = parse_box(boxes[i], i, line, error);
    if (!b.label.empty())
      for (const LabeledBox& o : f.boxes)
        if (o.label == b.label) error("label \"" + shown(b.label, 40) + "\" appears twice");
    f.boxes.push_back(std::move(b));
  }
  return f;
}

}  // namespace

RegionTrack RegionTrack::load(const std::string& path) {
  if (path.find('\0') != std::string::npos)  // the OS would open the name cut at the NUL
    fail("regions file name '" + shown(path, 120) + "' holds a NUL byte");
  std::ifstream in(path);
  if (!in) fail("cannot read regions file '" + shown(path, 120) + "': " + std::strerror(errno));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))  // a device or a folder would be read without end, or not at all
    fail("regions file '" + shown(path, 120) + "' is not a regular file");
  return parse(in, path);
}

RegionTrack RegionTrack::parse(std::istream& in, const std::string& name) {
  RegionTrack t;
  t.name_ = name;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (trim(text).empty()) continue;
    const FileError error(name, line);
    try {  // every error of the line in the library's words, with the file and the line
      t.keyframes_.push_back(parse_keyframe(nlohmann::json::parse(text), t.keyframes_, t.key_, line, error));
    } catch (const nlohmann::json::exception& e) {
      error(json_reason(e));
    }
  }
  if (in.bad()) fail("cannot read regions file '" + shown(name, 120) + "'");
  if (t.keyframes_.empty()) fail("regions file '" + shown(name, 120) + "' holds no keyframes");
  return t;
}

std::vector<LabeledBox> RegionTrack::boxes_at(const FrameContext& frame, bool interpolate) const {
  double t = 0, eps = 0;
  if (key_ == Key::Frame) {
    if (frame.index < 0) return {};
    t = static_cast<double>(frame.index);
  } else {
    if (!std::isfinite(frame.pts_seconds)) return {};
    t = frame.pts_seconds;
    eps = kPtsTolerance;
  }
  // The first keyframe after t; the one before it is the span's start.
  const auto next = std::upper_bound(keyframes_.begin(), keyframes_.end(), t + eps,
                                     [](double v, const Keyframe& k) { return v < k.at; });
  if (next == keyframes_.begin()) return {};  // before the first keyframe
  const Keyframe& k = *std::prev(next);
  if (t - k.at <= eps) return k.boxes;        // on a keyframe
  if (next == keyframes_.end()) return {};    // after the last keyframe
  if (!interpolate) return k.boxes;
  return between(k.boxes, next->boxes, (t - k.at) / (next->at - k.at));
}

std::size_t RegionTrack::max_boxes() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < keyframes_.size(); ++i) {
    const std::size_t span = keyframes_[i].boxes.size() + (i + 1 < keyframes_.size() ? keyframes_[i + 1].boxes.size() : 0);
    n = std::max(n, span);
  }
  return n;
}

namespace {
bool outside(const LabeledBox& b, int width, int height) {
  return b.x >= width || b.y >= height || b.x + b.w <= 0 || b.y + b.h <= 0;
}
}  // namespace

void RegionTrack::check_inside(int width, int height) const {
  for (const Keyframe& k : keyframes_)
    for (std::size_t i = 0; i < k.boxes.size(); ++i)
      if (outside(k.boxes[i], width, height))
        FileError(name_, k.line)("box " + std::to_string(i + 1) + " " + box_text(k.boxes[i]) +
                                 " lies entirely outside the " + std::to_string(width) + "x" + std::to_string(height) +
                                 " frame");
}

// ---- RegionSpec

namespace {
// A box as the mask takes it: margin applied, as edges.
RegionBox grown(const LabeledBox& b, double margin) {
  const double mx = margin * b.w, my = margin * b.h;
  return RegionBox{static_cast<float>(b.x - mx), static_cast<float>(b.y - my), static_cast<float>(b.x + b.w + mx),
                   static_cast<float>(b.y + b.h + my)};
}
}  // namespace

std::vector<RegionBox> RegionSpec::boxes_at(const FrameContext& frame, std::size_t* from_file) const {
  const std::vector<LabeledBox> file_boxes = track ? track->boxes_at(frame, interpolate) : std::vector<LabeledBox>{};
  std::vector<RegionBox> out;
  out.reserve(file_boxes.size() + boxes.size());
  for (const auto* list : {&file_boxes, &boxes}) {
    for (const LabeledBox& b : *list)
      if (b.w > 0 && b.h > 0) out.push_back(grown(b, margin));
    if (from_file && list == &file_boxes) *from_file = out.size();
  }
  return out;
}

void RegionSpec::check_frame_key(const FrameContext& frame) const {
  if (!track) return;
  const bool by_frame = track->key() == RegionTrack::Key::Frame;
  const bool has_index = frame.index >= 0, has_pts = std::isfinite(frame.pts_seconds);
  if (by_frame ? has_index : has_pts) return;
  const std::string file_name = "regions file '" + shown(track->name(), 120) + "'";
  if (!has_index && !has_pts)
    fail(filter + ": regions=FILE cannot apply here: " + file_name +
         " needs video frames with timestamps (a frame index or pts), and an image or plane filtered on its own has "
         "neither (box=x:y:w:h applies to any image)");
  fail(filter + ": " + file_name + " is keyed by \"" + (by_frame ? "frame" : "pts") + "\", but " +
       (has_index ? "frame " + std::to_string(frame.index) + " has no timestamp"
                  : "the frame at pts " + number(frame.pts_seconds) + " s has no index") +
       ", so its boxes cannot be placed");
}

bool covers_a_pixel(const RegionBox& b, double feather, int width, int height) {
  // Pixel x's centre x + 0.5 lies in [x0 - feather, x1 + feather).
  auto reaches = [feather](double lo, double hi, int n) {
    const double first = std::max(0.0, std::ceil(lo - feather - 0.5));
    const double end = std::min(static_cast<double>(n), std::ceil(hi + feather - 0.5));
    return first < end;
  };
  return reaches(b.x0, b.x1, width) && reaches(b.y0, b.y1, height);
}

void RegionUsage::add(const FrameContext& frame, bool touched) {
  ++frames_;
  if (touched) ++touched_;
  std::lock_guard<std::mutex> lock(mutex_);
  auto widen = [](double& first, double& last, double v) {
    if (std::isnan(v)) return;
    if (std::isnan(first) || v < first) first = v;
    if (std::isnan(last) || v > last) last = v;
  };
  widen(range_.first_index, range_.last_index, frame.index >= 0 ? static_cast<double>(frame.index) : std::nan(""));
  widen(range_.first_pts, range_.last_pts, frame.pts_seconds);
}

RegionUsage::Range RegionUsage::range() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return range_;
}

std::size_t RegionSpec::max_boxes() const { return (track ? track->max_boxes() : 0) + boxes.size(); }

void RegionSpec::check_frame(int width, int height) const {
  if (track) track->check_inside(width, height);
  for (const LabeledBox& b : boxes)
    if (outside(b, width, height))
      fail("box=" + number(b.x) + ":" + number(b.y) + ":" + number(b.w) + ":" + number(b.h) +
           " lies entirely outside the " + std::to_string(width) + "x" + std::to_string(height) + " frame");
}

// ---- regions files that cannot match the video

namespace {

// Where a file can place boxes, in its key's units: boxes without a partner
// stay over a span (interpolate=1) and a keyframe's boxes hold until the next
// (interpolate=0), so the span after the last keyframe with boxes gets them,
// and with interpolation the span before the first one too.
struct BoxKeys {
  double first = 0, last = 0;
  int first_line = 0, last_line = 0;
};

std::optional<BoxKeys> box_keys(const RegionTrack& t, bool interpolate) {
  const auto& k = t.keyframes();
  const double step = t.key() == RegionTrack::Key::Frame ? 1 : 0;  // the keyframe without boxes itself gets none
  std::optional<std::size_t> i0, i1;
  BoxKeys r;
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (k[i].boxes.empty()) continue;
    if (!i0) i0 = i;
    i1 = i;
  }
  if (!i0) return std::nullopt;
  r.first = interpolate && *i0 > 0 ? k[*i0 - 1].at + step : k[*i0].at;
  r.last = *i1 + 1 < k.size() ? k[*i1 + 1].at - step : k[*i1].at;
  r.first_line = k[*i0].line;
  r.last_line = k[*i1].line;
  return r;
}

std::string file_label(const RegionSpec& spec) { return "regions file '" + shown(spec.track->name(), 120) + "'"; }

std::string lines_text(const BoxKeys& b) {
  return b.first_line == b.last_line ? "line " + std::to_string(b.first_line)
                                     : "lines " + std::to_string(b.first_line) + " to " + std::to_string(b.last_line);
}

// "frames 100 to 200" or "pts 5 to 8 s", in the file's key.
std::string keys_text(const RegionTrack& t, double first, double last) {
  if (t.key() == RegionTrack::Key::Frame) return "frames " + number(first) + " to " + number(last);
  return "pts " + number(first) + " to " + number(last) + " s";
}

// "its boxes lie on frames 100 to 200 (lines 2 to 4)" or "... lie at pts 5 to 8 s (...)".
std::string boxes_text(const RegionTrack& t, const BoxKeys& b) {
  return std::string("its boxes lie ") + (t.key() == RegionTrack::Key::Frame ? "on " : "at ") +
         keys_text(t, b.first, b.last) + " (" + lines_text(b) + ")";
}

// No box of the file reaches a pixel centre (boxes in fractions of the picture, say).
std::string pixel_problem(const RegionSpec& spec, const RegionVideo& v) {
  const LabeledBox* largest = nullptr;
  std::size_t n = 0;
  for (const RegionTrack::Keyframe& k : spec.track->keyframes())
    for (const LabeledBox& b : k.boxes) {
      if (covers_a_pixel(grown(b, spec.margin), spec.feather, v.width, v.height)) return "";
      if (!largest || b.w * b.h > largest->w * largest->h) largest = &b;
      ++n;
    }
  const std::string none = n == 1 ? "its box reaches no pixel" : "none of its " + std::to_string(n) + " boxes reaches a pixel";
  return none + " of the " + std::to_string(v.width) + "x" +
         std::to_string(v.height) + " picture (the largest is " + number(largest->w) + "x" + number(largest->h) +
         ", line " + std::to_string(largest->line) + "); boxes are in luma pixels, not fractions of the picture";
}

std::string frame_problem(const RegionSpec& spec, const BoxKeys& b, const RegionVideo& v) {
  if (v.frames <= 0) return "";
  const int64_t margin = std::max<int64_t>(1, v.frames / 100);  // the count is the container's estimate
  if (b.first < static_cast<double>(v.frames + margin)) return "";
  return boxes_text(*spec.track, b) + ", but the video has " +
         std::to_string(v.frames) + " frames (0 to " + std::to_string(v.frames - 1) + ")";
}

// pts keys in another unit: they reach more than the input's length past its
// end, and fit the input as frame numbers or milliseconds.
std::string unit_problem(const RegionSpec& spec, const RegionVideo& v) {
  const double length = v.input_end_s - v.input_start_s;
  if (!(length > 0)) return "";
  const auto& k = spec.track->keyframes();
  const double last = k.back().at;
  if (!(last > v.input_end_s + std::max(1.0, length))) return "";
  const bool whole = std::all_of(k.begin(), k.end(), [](const RegionTrack::Keyframe& f) { return f.at == std::floor(f.at); });
  const auto fits = [&](double seconds) { return seconds <= length + 1.0; };
  std::string unit, fix = "\"pts\" is in seconds, as ffprobe's pts_time";
  if (whole && v.frame_rate > 0 && fits(last / v.frame_rate)) {
    unit = "frame numbers (frame " + number(last) + " at " + number(v.frame_rate) + " fps is at " +
           number(last / v.frame_rate) + " s)";
    fix += "; frame numbers go in \"frame\"";
  } else if (fits(last / 1000)) {
    unit = "milliseconds (" + number(last) + " ms is " + number(last / 1000) + " s)";
  } else {
    return "";
  }
  return "its \"pts\" keys run from " + number(k.front().at) + " to " + number(last) + " s, but the video lasts " +
         number(length) + " s (pts " + number(v.input_start_s) + " to " + number(v.input_end_s) +
         " s); they look like " + unit + ": " + fix;
}

std::string pts_problem(const RegionSpec& spec, const BoxKeys& b, const RegionVideo& v) {
  if (std::string why = unit_problem(spec, v); !why.empty()) return why;
  if (!std::isfinite(v.start_s) || !std::isfinite(v.end_s)) return "";
  const double step = v.frame_rate > 0 ? 1 / v.frame_rate : 0;
  const double slack = v.frame_rate > 0 ? 2 * step : 0.1;  // the end is the container's estimate
  if (b.first <= v.end_s + slack && b.last >= v.start_s - slack) return "";
  return boxes_text(*spec.track, b) + ", but the video's frames lie at pts " + number(v.start_s) + " to " + number(std::max(v.start_s, v.end_s - step)) +
         " s";
}

}  // namespace

std::string regions_never_match(const RegionSpec& spec, const RegionVideo& video) {
  if (!spec.track) return "";
  const std::string what = file_label(spec) + " does not fit this video: ";
  const std::optional<BoxKeys> keys = box_keys(*spec.track, spec.interpolate);
  if (!keys) {
    const std::size_t n = spec.track->keyframes().size();
    return what + (n == 1 ? "its keyframe has no box" : "none of its " + std::to_string(n) + " keyframes has a box") +
           ", so it blurs nothing";
  }
  std::string why;
  if (video.width > 0 && video.height > 0) why = pixel_problem(spec, video);
  if (why.empty())
    why = spec.track->key() == RegionTrack::Key::Frame ? frame_problem(spec, *keys, video) : pts_problem(spec, *keys, video);
  return why.empty() ? "" : what + why;
}

std::string regions_unused(const RegionSpec& spec) {
  if (!spec.track || spec.usage->frames() == 0 || spec.usage->frames_touched() > 0) return "";
  const RegionUsage::Range r = spec.usage->range();
  const bool by_frame = spec.track->key() == RegionTrack::Key::Frame;
  const double first = by_frame ? r.first_index : r.first_pts, last = by_frame ? r.last_index : r.last_pts;
  std::string seen = std::isnan(first) ? "" : " (" + keys_text(*spec.track, first, last) + ")";
  const std::optional<BoxKeys> keys = box_keys(*spec.track, spec.interpolate);
  const std::string boxes = keys ? boxes_text(*spec.track, *keys) : "it has no boxes";
  return file_label(spec) + ": no box touched any of the " + std::to_string(spec.usage->frames()) + " frames" + seen +
         "; " + boxes;
}

std::string RegionSpec::describe() const {
  std::ostringstream s;
  s << "[";
  const char* sep = "";
  if (track) {
    s << "regions=" << file << "(" << track->keyframes().size() << " keyframes)";
    sep = ",";
  }
  for (const LabeledBox& b : boxes) {
    s << sep << "box=" << b.x << ":" << b.y << ":" << b.w << ":" << b.h;
    sep = ",";
  }
  s << ",margin=" << margin << ",feather=" << feather << ",shape=" << (shape == RegionShape::Ellipse ? "ellipse" : "rect")
    << ",interpolate=" << (interpolate ? 1 : 0) << "]";
  return s.str();
}

// ---- option peeling

std::string region_options_help() {
  return "Region options (any filter; limit it to boxes, e.g. to anonymise faces):\n"
         "  regions <file>  JSON Lines keyframes {\"frame\": N, \"boxes\": [[x, y, w, h, \"label\"?], ...]} or "
         "{\"pts\": SECONDS, ...}, luma pixels\n"
         "  box <x:y:w:h>  one static rectangle on every frame (repeatable)\n"
         "  margin <float>  grow each side by this fraction of the box's width/height (default 0, range 0 to 10)\n"
         "  feather <float>  soft edge outside each box, luma pixels (default 0, range 0 to 10000)\n"
         "  shape <rect|ellipse>  the box or the ellipse inscribed in it (default rect)\n"
         "  interpolate <bool>  move boxes linearly between keyframes; 0 holds each keyframe's boxes (default 1)\n";
}

std::shared_ptr<const RegionSpec> take_region_options(const std::string& filter, std::string& options) {
  static const char* const kNames[] = {"regions", "box", "margin", "feather", "shape", "interpolate"};
  // Split and unquoted as the chain parser does (filter.hpp: FFmpeg's quoting
  // and escaping); what is not ours goes back into `options` as written.
  const std::vector<std::string> tokens = chain_text::split(options, ":");
  std::vector<std::string> rest;
  auto spec = std::make_shared<RegionSpec>();
  spec->filter = filter;
  bool any = false, modifiers = false;
  std::string modifier_seen;
  auto bad = [&](const std::string& msg) { fail(filter + ": " + msg); };
  auto parse_number = [&](const std::string& opt, const std::string& text, double lo, double hi) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v))
      bad("option '" + opt + "' needs a number, got '" + shown(text, 40) + "'");
    if (v < lo || v > hi)
      bad("option '" + opt + "' value '" + shown(text, 40) + "' is out of range [" + number(lo) + ", " + number(hi) + "]");
    return v;
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::vector<std::string> kv = chain_text::split(tokens[i], "=");
    const std::string key = kv.size() == 1 ? "" : chain_text::unquote(kv[0]);
    if (std::find(std::begin(kNames), std::end(kNames), key) == std::end(kNames)) {
      rest.push_back(tokens[i]);
      continue;
    }
    any = true;
    const std::string value = chain_text::unquote(tokens[i].substr(kv[0].size() + 1));
    if (key == "regions") {
      if (spec->track) bad("regions= given twice");
      if (value.empty()) bad("regions= needs a file name");
      spec->file = value;
      spec->track = std::make_shared<const RegionTrack>(RegionTrack::load(value));
    } else if (key == "box") {
      // box=x:y:w:h: the ':' separating options also separates the four values.
      if (i + 3 >= tokens.size()) bad("box needs x:y:w:h (four numbers), got 'box=" + shown(value, 40) + "'");
      LabeledBox b;
      b.x = parse_number("box", value, -1e9, 1e9);
      b.y = parse_number("box", chain_text::unquote(tokens[i + 1]), -1e9, 1e9);
      b.w = parse_number("box", chain_text::unquote(tokens[i + 2]), -1e9, 1e9);
      b.h = parse_number("box", chain_text::unquote(tokens[i + 3]), -1e9, 1e9);
      i += 3;
      // A zero-size box would cover nothing (and one at 0:0 was said to lie outside the frame).
      if (!size_problem(b.w, b.h).empty())
        bad(size_message("box=" + number(b.x) + ":" + number(b.y) + ":" + number(b.w) + ":" + number(b.h), b));
      spec->boxes.push_back(b);
    } else {
      modifiers = true;
      if (modifier_seen.empty()) modifier_seen = key;
      if (key == "margin") {
        spec->margin = parse_number(key, value, 0, 10);
      } else if (key == "feather") {
        spec->feather = parse_number(key, value, 0, 10000);
      } else if (key == "shape") {
        if (value == "rect") spec->shape = RegionShape::Rect;
        else if (value == "ellipse") spec->shape = RegionShape::Ellipse;
        else bad("option 'shape' must be rect or ellipse, got '" + shown(value, 40) + "'");
      } else {  // interpolate
        if (value == "true" || value == "1") spec->interpolate = true;
        else if (value == "false" || value == "0") spec->interpolate = false;
        else bad("option 'interpolate' must be 0 or 1, got '" + shown(value, 40) + "'");
      }
    }
  }
  if (!any) return nullptr;
  if (modifiers && !spec->track && spec->boxes.empty())
    bad("option '" + modifier_seen + "' needs regions=FILE or box=x:y:w:h");
  std::string joined;
  for (std::size_t i = 0; i < rest.size(); ++i) joined += (i ? ":" : "") + rest[i];
  options = joined;
  return spec;
}

// ---- the filter wrapper

namespace {

template <class T>
Plane<T> typed(const AnyPlane& p) {
  return Plane<T>(static_cast<T*>(p.data), p.width, p.height, p.pitch, p.channels);
}

// A rectangle of plane pixels [x0, x1) x [y0, y1).
struct Crop {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
  int width() const { return x1 - x0; }
  int height() const { return y1 - y0; }
};

int64_t floor_to(int64_t v, int64_t m) { return v / m * m; }  // v >= 0
int64_t ceil_to(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Alignment of a crop's left edge in pixels: keeps SIMD lanes and CUDA vector
// loads where they are on the whole plane (a multiple of every vector width in samples).
constexpr int64_t kCropAlign = 64;

class RegionFilter final : public Filter {
 public:
  RegionFilter(std::unique_ptr<Filter> inner, std::shared_ptr<const RegionSpec> spec)
      : inner_(std::move(inner)), spec_(std::move(spec)) {}

  void configure(const FrameLayout& layout, Backend backend) override {
    inner_->configure(layout, backend);
    spec_->check_frame(layout.width, layout.height);
    layout_ = layout;
    backend_ = backend;
    for (int p = 0; p < layout.num_planes; ++p) {
      reach_[p] = inner_->reach(p);
      saved_host_[p].clear();
    }
#if STREAMBLUR_HAVE_CUDA
    device_ = detail::RegionBlendCuda();
    if (backend == Backend::Cuda) device_.configure(layout, *inner_, spec_->max_boxes());
#endif
  }
  bool touches(int plane) const override { return inner_->touches(plane); }

  void begin_frame(const FrameContext& frame) override {
    spec_->check_frame_key(frame);  // a file's boxes that cannot be placed never pass silently
    inner_->begin_frame(frame);
    std::size_t from_file = 0;
    boxes_ = spec_->boxes_at(frame, &from_file);
#if STREAMBLUR_HAVE_CUDA
    device_.begin_frame();
#endif
    if (!spec_->track) return;
    const bool touched = std::any_of(boxes_.begin(), boxes_.begin() + static_cast<std::ptrdiff_t>(from_file),
                                     [&](const RegionBox& b) {
                                       return covers_a_pixel(b, spec_->feather, layout_.width, layout_.height);
                                     });
    spec_->usage->add(frame, touched);
  }

  void apply(int p, const AnyPlane& d, DeviceStream stream) override {
    const Crop c = crop_of(p, d.width, d.height);
    if (c.empty()) return;  // no box reaches this plane: it stays the input
    const std::size_t sample = static_cast<std::size_t>(d.bytes_per_sample);
    AnyPlane sub = d;
    sub.data = static_cast<unsigned char*>(d.data) + static_cast<std::ptrdiff_t>(c.y0) * d.pitch +
               static_cast<std::ptrdiff_t>(c.x0) * d.channels * sample;
    sub.width = c.width();
    sub.height = c.height();
    const std::size_t row = static_cast<std::size_t>(sub.width) * d.channels * sample;
    AnyPlane saved = sub;
    saved.pitch = static_cast<std::ptrdiff_t>(row);
    RegionMask mask;
    mask.feather = static_cast<float>(spec_->feather);
    mask.ellipse = spec_->shape == RegionShape::Ellipse;
    mask.log2_w = layout_.planes[p].log2_chroma_w;
    mask.log2_h = layout_.planes[p].log2_chroma_h;
    mask.x0 = c.x0;
    mask.y0 = c.y0;
#if STREAMBLUR_HAVE_CUDA
    if (backend_ == Backend::Cuda) return device_.apply(*inner_, p, sub, row, boxes_, mask, stream);
#endif
    std::vector<unsigned char>& buf = saved_host_[p];
    buf.resize(row * sub.height);
    saved.data = buf.data();
    for (int y = 0; y < sub.height; ++y)
      std::memcpy(buf.data() + y * row, static_cast<const unsigned char*>(sub.data) + y * sub.pitch, row);
    inner_->apply(p, sub, stream);
    tbb::parallel_for(tbb::blocked_range<int>(0, sub.height, 8), [&](const tbb::blocked_range<int>& r) {
      if (d.bytes_per_sample == 1)
        cpu::region_blend_rows<uint8_t>(typed<const uint8_t>(saved), typed<uint8_t>(sub), boxes_, mask, r.begin(), r.end());
      else
        cpu::region_blend_rows<uint16_t>(typed<const uint16_t>(saved), typed<uint16_t>(sub), boxes_, mask, r.begin(),
                                         r.end());
    });
  }

  std::string describe() const override { return inner_->describe() + spec_->describe(); }
  std::size_t device_bytes() const override {
#if STREAMBLUR_HAVE_CUDA
    return inner_->device_bytes() + device_.device_bytes();
#else
    return inner_->device_bytes();
#endif
  }

 private:
  // The plane pixels to filter: those whose mask may be above 0, grown by the
  // inner filter's reach and aligned to its grid; the whole plane when the
  // filter gives no reach.
  Crop crop_of(int p, int width, int height) const {
    if (boxes_.empty()) return {};
    const double f = spec_->feather;
    double X0 = std::numeric_limits<double>::infinity(), Y0 = X0, X1 = -X0, Y1 = -X0;
    for (const RegionBox& b : boxes_) {
      X0 = std::min(X0, b.x0 - f);
      Y0 = std::min(Y0, b.y0 - f);
      X1 = std::max(X1, b.x1 + f);
      Y1 = std::max(Y1, b.y1 + f);
    }
    const PlaneLayout& pl = layout_.planes[p];
    const double sx = 1 << pl.log2_chroma_w, sy = 1 << pl.log2_chroma_h;
    // Pixel x's centre is (x + 0.5) sx; one pixel more each side for rounding.
    auto lo = [](double v, double s, int n) { return static_cast<int64_t>(std::clamp(std::floor(v / s - 0.5) - 1, 0.0, double(n))); };
    auto hi = [](double v, double s, int n) { return static_cast<int64_t>(std::clamp(std::ceil(v / s - 0.5) + 2, 0.0, double(n))); };
    int64_t x0 = lo(X0, sx, width), x1 = hi(X1, sx, width), y0 = lo(Y0, sy, height), y1 = hi(Y1, sy, height);
    if (x1 <= x0 || y1 <= y0) return {};
    const std::optional<FilterReach>& r = reach_[p];
    if (!r) return {0, 0, width, height};
    const int64_t ax = std::lcm(kCropAlign, static_cast<int64_t>(std::max(1, r->grid_x)));
    const int64_t ay = std::max(1, r->grid_y);
    x0 = floor_to(std::max<int64_t>(0, x0 - r->x), ax);
    y0 = floor_to(std::max<int64_t>(0, y0 - r->y), ay);
    x1 = std::min<int64_t>(width, ceil_to(x1 + r->x, ax));
    y1 = std::min<int64_t>(height, ceil_to(y1 + r->y, ay));
    return {static_cast<int>(x0), static_cast<int>(y0), static_cast<int>(x1), static_cast<int>(y1)};
  }

  std::unique_ptr<Filter> inner_;
  std::shared_ptr<const RegionSpec> spec_;
  FrameLayout layout_;
  Backend backend_ = Backend::Cpu;
  std::array<std::optional<FilterReach>, 4> reach_{};
  std::vector<RegionBox> boxes_;  // this frame's
  // The crop before filtering, per plane.
  std::array<std::vector<unsigned char>, 4> saved_host_;
#if STREAMBLUR_HAVE_CUDA
  detail::RegionBlendCuda device_;  // the same on the device, and the boxes there
#endif
};

}  // namespace

std::unique_ptr<Filter> make_region_filter(std::unique_ptr<Filter> inner, std::shared_ptr<const RegionSpec> spec) {
  return std::make_unique<RegionFilter>(std::move(inner), std::move(spec));
}

std::unique_ptr<Filter> RegionSpec::wrap(std::unique_ptr<Filter> inner) const {
  return make_region_filter(std::move(inner), shared_from_this());
}

const RegionSpec* regions_of(const FilterInstanceSpec& filter) {
  for (const auto& d : filter.decorations)
    if (const auto* r = dynamic_cast<const RegionSpec*>(d.get())) return r;
  return nullptr;
}

OptionHook region_option_hook() {
  return OptionHook{[](const std::string& filter, std::string& options) -> std::shared_ptr<const FilterDecoration> {
                      return take_region_options(filter, options);
                    },
                    &region_options_help};
}

}  // namespace streamblur
