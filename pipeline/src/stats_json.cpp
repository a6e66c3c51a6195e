#include "streamblur/pipeline/stats_json.hpp"

#include <nlohmann/json.hpp>

namespace streamblur {
namespace {

using Json = nlohmann::ordered_json;

Json stage_json(const StageStats& s) { return {{"busy_s", s.busy_s}, {"blocked_s", s.blocked_s}}; }

Json stats_object(const RunStats& st) {
  return {{"backend", st.backend},
          {"decoder", st.decoder},
          {"device", st.device},
          {"filters", st.filters},
          {"frames", st.frames},
          {"wall_s", st.wall_s},
          {"fps", st.fps},
          {"setup_s", st.setup_s},
          {"first_frame_s", st.first_frame_s},
          {"finish_s", st.finish_s},
          {"segments", st.segments},
          {"scan_s", st.scan_s},
          {"join_s", st.join_s},
          {"input_format", st.input_format},
          {"processing_format", st.processing_format},
          {"decode_warnings", st.decode_warnings},
          {"stopped_early", st.stopped_early},
          {"bounding_stage", st.bounding_stage},
          {"gpu_memory_bytes", st.gpu_memory_bytes},
          {"stages",
           {{"decode", stage_json(st.decode)},
            {"upload", stage_json(st.upload)},
            {"filter", stage_json(st.filter)},
            {"download", stage_json(st.download)},
            {"encode", stage_json(st.encode)}}}};
}

// What a run that did not succeed never got to decide: texts null, counts 0.
void blank_undecided(Json& j) {
  for (auto& [key, value] : j.items()) {
    if (key == "wall_s" || key == "device") continue;
    if (value.is_string()) value = nullptr;
    else if (value.is_number()) value = 0;
  }
  j.erase("stages");
  j["stages"] = nullptr;
}

}  // namespace

std::string run_stats_json(const RunStats& stats, int indent) { return stats_object(stats).dump(indent); }

std::string batch_result_json(const BatchResult& r, int indent) {
  Json j = {{"input", r.job.input}, {"output", r.job.output}, {"ok", r.ok}};
  if (!r.ok && !r.skipped) j["error"] = r.error;
  if (r.skipped) j["skipped"] = r.kept_existing ? "output exists" : "interrupted";
  Json stats = stats_object(r.stats);
  if (!r.ok) blank_undecided(stats);
  stats["device"] = r.device;
  for (auto& [key, value] : stats.items()) j[key] = value;
  return j.dump(indent);
}

}  // namespace streamblur
