#pragma once
// The checks of a chain's regions files against a run's video
// (streamblur/pipeline/regions.hpp, "Checks"): before the first frame, files
// that cannot match the video; at the end, files whose boxes touched no
// frame. Warnings, or with PipelineOptions::strict_regions the run's error.
// Internal to streamblur_pipeline: the plain run and the segmented run (whose
// spans share one parsed chain, so the usage counts cover every span) both
// use it.
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "streamblur/io/reader.hpp"
#include "streamblur/pipeline/filter.hpp"
#include "streamblur/pipeline/regions.hpp"

namespace streamblur::detail {

// What the checks know of a run's frames before the first one, from its
// reader (opened with the run's trim): the picture, `frames` (the count the
// run will write, exact or estimated; 0 unknown) and the frames' pts range on
// the clock the filters see (shifted back by the trim's start; `trimmed_start`:
// the run has one, and frames before it are dropped).
RegionVideo region_video(const io::MediaReader& reader, bool trimmed_start, int64_t frames);

class RegionChecks {
 public:
  // `writes_output`: the run writes a file (its strict error says none is written).
  RegionChecks(const std::vector<FilterInstanceSpec>& chain, bool strict, bool writes_output,
               std::function<void(const std::string&)> note);

  // Before the first frame: the files that cannot match `video`.
  void fit(const RegionVideo& video);
  // At the end, before the output is committed: the files no frame used
  // (those fit() reported are not said again).
  void used();

 private:
  void problem(const std::string& why);

  const std::vector<FilterInstanceSpec>& chain_;
  bool strict_, writes_output_;
  std::function<void(const std::string&)> note_;
  std::set<const RegionSpec*> reported_;
};

}  // namespace streamblur::detail
