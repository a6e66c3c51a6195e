#pragma once
// Region limits for any filter of a chain, for anonymising (blur or pixelate
// the faces and plates a detector found):
//
//   gblur=sigma=12:regions=faces.jsonl:margin=0.1:feather=8:shape=ellipse
//   pixelate=block=16:box=320:400:120:40
//
// The options below are common to every filter; the chain parser takes them
// off (take_region_options) before the filter's own option table sees the
// rest, and the chain wraps the filter in a region filter
// (make_region_filter). Per sample:
//   out = in + alpha * (filtered - in), rounded half up,
// alpha from the boxes (streamblur/kernels/regions.hpp): 0 outside (the input
// bit for bit), 1 inside (the filtered frame exactly), a linear ramp over
// `feather` pixels outside each box.
//
//   regions=FILE   JSON Lines keyframes, one object a line:
//                    {"frame": 37, "boxes": [[x, y, w, h], [x, y, w, h, "label"], ...]}
//                    {"pts": 1.234, "boxes": [...]}
//                  in luma pixels; "frame" is the index in output order
//                  from 0, "pts" the presentation time in seconds (a frame
//                  within 0.1 ms of a keyframe's pts is on it). The first
//                  keyframe decides which key the file uses ("frame" when it
//                  has both); keys must increase strictly; w and h above 0.
//                  A ':' or ',' in FILE is escaped (dir\:x/f.jsonl) or the
//                  name quoted ('a,b:c.jsonl'), as in FFmpeg (filter.hpp).
//   box=x:y:w:h    one static rectangle on every frame (repeatable; w, h above 0)
//   margin=F       each side moves out by F x the box's width (left, right)
//                  or height (top, bottom); 0 by default
//   feather=PX     soft edge outside each box, in luma pixels; 0 by default
//   shape=rect|ellipse   the box or the ellipse inscribed in it
//   interpolate=1  between two keyframes the boxes move linearly (default);
//                  0 holds each keyframe's boxes until the next one
//
// Interpolation matches a box of one keyframe with one of the next: boxes with
// a label by label, boxes without by their order among the unlabelled ones. A
// box with no partner (a face found in only one of the two keyframes) stays
// where it was seen over the whole span between them: the filter errs on
// covering. Frames before the first keyframe and after the last get no boxes
// from the file (end a file with a keyframe on the last frame, with its boxes
// or an empty list); box= rectangles apply to every frame.
//
// Never silently wrong: a regions file needs frames with a key (its filter
// throws on a frame without one, as on an image or plane filtered on its own,
// RegionSpec::check_frame_key), and a run reports a file that cannot match its
// video before the first frame (regions_never_match) and one whose boxes
// touched no frame at its end (regions_unused): warnings, or the run's error
// with PipelineOptions::strict_regions (pipeline.cpp; docs/regions.md).
//
// Work: on each plane the filter runs only on the boxes' bounding rectangle
// grown by the filter's reach (Filter::reach) and aligned to its grid (and to
// 64 pixels, so SIMD and vector loads keep their alignment); filters that
// give no reach run on the whole plane.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "streamblur/kernels/regions.hpp"
#include "streamblur/pipeline/filter.hpp"

namespace streamblur {

// A box in luma pixels, as written in a regions file or a box= option.
struct LabeledBox {
  double x = 0, y = 0, w = 0, h = 0;
  std::string label;  // "" when none
  int line = 0;       // of the regions file (0: box=)
};

// A regions file, parsed and checked.
class RegionTrack {
 public:
  enum class Key { Frame, Pts };
  struct Keyframe {
    double at = 0;  // frame index or pts seconds
    int line = 0;
    std::vector<LabeledBox> boxes;
  };
  // A frame within this of a keyframe's pts is on that keyframe.
  static constexpr double kPtsTolerance = 1e-4;

  // Throws std::invalid_argument, one line "regions file 'PATH', line N: ..."
  // (only the file where no line is at fault): unreadable file, malformed JSON
  // (a number beyond a double included), no "boxes", a bad box, a width or
  // height not above 0, neither "pts" nor "frame", keys not increasing, no
  // keyframes; a NUL in `path`.
  static RegionTrack load(const std::string& path);
  static RegionTrack parse(std::istream& in, const std::string& name);

  Key key() const { return key_; }
  const std::vector<Keyframe>& keyframes() const { return keyframes_; }
  const std::string& name() const { return name_; }
  // The boxes at `frame` (see the top of this file); none when the frame's
  // key (index or pts) is unknown.
  std::vector<LabeledBox> boxes_at(const FrameContext& frame, bool interpolate) const;
  // The most boxes boxes_at can return.
  std::size_t max_boxes() const;
  // Throws std::invalid_argument when a box lies entirely outside a width x height frame.
  void check_inside(int width, int height) const;

 private:
  std::string name_;
  Key key_ = Key::Frame;
  std::vector<Keyframe> keyframes_;
};

// shape=: the box itself or the ellipse inscribed in it.
enum class RegionShape { Rect, Ellipse };

// What the region filters of one parsed chain saw of a regions file over a
// run (every frame slot's filter adds to the same counts): the frames they
// were given, those on which a box of the file covered a pixel of the
// picture, and the range of the frames' keys.
class RegionUsage {
 public:
  void add(const FrameContext& frame, bool touched);
  int64_t frames() const { return frames_.load(); }
  int64_t frames_touched() const { return touched_.load(); }
  // The first and last frame index and pts (seconds) seen; NaN when none.
  struct Range {
    double first_index = std::nan(""), last_index = std::nan("");
    double first_pts = std::nan(""), last_pts = std::nan("");
  };
  Range range() const;

 private:
  std::atomic<int64_t> frames_{0}, touched_{0};
  mutable std::mutex mutex_;
  Range range_;
};

// The region options of one filter of the chain; wrap() limits the filter to them.
struct RegionSpec final : FilterDecoration, std::enable_shared_from_this<RegionSpec> {
  std::string filter;                        // the filter's name, for messages
  std::shared_ptr<const RegionTrack> track;  // regions=FILE; null when none
  std::string file;                          // as given
  std::vector<LabeledBox> boxes;             // box=x:y:w:h, on every frame
  double margin = 0;
  double feather = 0;
  RegionShape shape = RegionShape::Rect;
  bool interpolate = true;
  // What the chain's region filters saw of the file (regions=FILE) in a run.
  std::shared_ptr<RegionUsage> usage = std::make_shared<RegionUsage>();

  // The mask boxes at `frame`: the file's (their count in *from_file) then
  // the static ones, margin applied; empty boxes left out.
  std::vector<RegionBox> boxes_at(const FrameContext& frame, std::size_t* from_file = nullptr) const;
  // Throws std::invalid_argument (one line) when `frame` lacks the key the
  // regions file needs ("frame": an index; "pts": a timestamp), as a plane
  // or image filtered on its own (FilterChain::apply without a FrameContext)
  // lacks both: its boxes could not be placed, and the filter would silently
  // filter nothing.
  void check_frame_key(const FrameContext& frame) const;
  std::size_t max_boxes() const;
  // Throws std::invalid_argument when a box (file or box=) lies entirely outside the frame.
  void check_frame(int width, int height) const;
  std::string describe() const;
  std::unique_ptr<Filter> wrap(std::unique_ptr<Filter> inner) const override;
};

// The region options of a parsed filter; null when it has none.
const RegionSpec* regions_of(const FilterInstanceSpec& filter);

// Whether a mask box (luma pixels) with a soft edge of `feather` pixels
// reaches the centre of a pixel of a width x height picture.
bool covers_a_pixel(const RegionBox& box, double feather, int width, int height);

// ---- regions files that cannot match the video (docs/regions.md, "Checks")
//
// What a run knows of its video before the first frame. Frame counts and
// times are the container's (estimates), so the checks below leave a margin;
// regions_unused() is exact, from what the run saw.
struct RegionVideo {
  int width = 0, height = 0;
  int64_t frames = 0;                 // frames the run will write (estimated); 0 unknown
  double frame_rate = 0;              // frames per second; 0 unknown
  double start_s = std::nan("");      // the run's first frame's pts, seconds; NaN unknown
  double end_s = std::nan("");        // the end of the run's last frame, seconds; NaN unknown
  double input_start_s = std::nan(""), input_end_s = std::nan("");  // the whole input, on the same clock
};

// Why `spec`'s regions file cannot match `video` (one line "regions file
// 'PATH' does not fit this video: ..." with the numbers), or "" when it may
// (or when spec has no file). Rules, in order:
//  - no keyframe has a box;
//  - no box (margin and feather applied) reaches a pixel centre of the
//    picture (boxes in 0..1 fractions of the picture, say);
//  - "frame" keys: the first frame that can get a box is past the last
//    frame (the estimate plus 1%, at least one frame);
//  - "pts" keys: the last key lies more than the input's length past the
//    input's end, and the keys fit the input read as frame numbers (all
//    whole numbers, divided by the frame rate) or as milliseconds (divided by
//    1000); or every pts that can get a box lies outside the run's frames
//    (more than two frame intervals, or 0.1 s, before the first or after the last).
std::string regions_never_match(const RegionSpec& spec, const RegionVideo& video);

// After a run: when `spec` has a file whose boxes covered a pixel of none
// of the frames the run filtered, one line saying so with the numbers
// ("regions file 'PATH': no box touched any of the N frames ..."); "" otherwise.
std::string regions_unused(const RegionSpec& spec);

// Takes regions=, box=, margin=, feather=, shape= and interpolate= out of a
// filter's option text ("sigma=12:regions=f.jsonl" -> "sigma=12") and returns
// them, or null (options untouched) when there are none. `options` is split
// and unquoted by the chain's rules (chain_text in filter.hpp); the rest is
// left as written. Reads and checks the regions file now. Throws
// std::invalid_argument with one clear line.
std::shared_ptr<const RegionSpec> take_region_options(const std::string& filter, std::string& options);

// `inner` limited to the regions.
std::unique_ptr<Filter> make_region_filter(std::unique_ptr<Filter> inner, std::shared_ptr<const RegionSpec> spec);

// The region options' part of --help-filter.
std::string region_options_help();

// The option hook that takes the region options (registry.cpp registers it).
OptionHook region_option_hook();

}  // namespace streamblur
