// streamblur: blur a video (or a still image) with a chain of filters on the
// GPU, keeping audio, timestamps and metadata.
//   streamblur in.mp4 out.mp4 --vf "gblur=sigma=2,boxblur=radius=3"
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

extern "C" {
#include <libavutil/log.h>
}

#include "streamblur/io/log.hpp"
#include "streamblur/pipeline/pipeline.hpp"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_sigint(int) {
  g_stop.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the program at once
}

std::string clock_text(double s) {
  if (!(s >= 0) || s > 1e7) return "--:--";
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

nlohmann::json stage_json(const streamblur::StageStats& s) { return {{"busy_s", s.busy_s}, {"blocked_s", s.blocked_s}}; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"streamblur: blur video on the GPU with a chain of filters, keeping audio, timestamps and metadata"};
  app.set_version_flag("--version", "streamblur 0.1.0");
  std::string input, output, vf, codec, preset, backend = "auto", stats_json, help_filter;
  std::vector<std::string> encoder_opts;
  int crf = -1, inflight = 4, threads = 0;
  bool overwrite = false, quiet = false, list_filters = false, verbose = false;
  app.add_option("input", input, "input video or image (anything FFmpeg opens)");
  app.add_option("output", output, "output file; the container comes from its extension");
  app.add_option("--vf", vf, "filter chain, e.g. \"gblur=sigma=2,boxblur=radius=3\" (see --list-filters)");
  app.add_option("-c,--codec", codec, "video encoder by FFmpeg name (default: libx264; the image encoder for image outputs)");
  app.add_option("--crf", crf, "constant rate factor for encoders that have one (libx264 default here: 18)")->check(CLI::Range(0, 63));
  app.add_option("--preset", preset, "encoder preset, e.g. ultrafast ... veryslow for libx264");
  app.add_option("--encoder-opt", encoder_opts, "encoder option key=value (repeatable)");
  app.add_option("--backend", backend, "auto (CUDA when a device is present), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app.add_option("--inflight", inflight, "frames in flight (slots of pinned + device memory)")->check(CLI::Range(1, 64));
  app.add_option("--threads", threads, "decoder threads (0 = automatic)")->check(CLI::Range(0, 256));
  app.add_flag("-y,--overwrite", overwrite, "overwrite the output if it exists");
  app.add_flag("-q,--quiet", quiet, "no progress line and no notes");
  app.add_flag("-v,--verbose", verbose, "let FFmpeg print its own log");
  app.add_option("--stats-json", stats_json, "write frame count, wall time, fps and per-stage times to FILE");
  app.add_flag("--list-filters", list_filters, "list the filters");
  app.add_option("--help-filter", help_filter, "describe a filter and its options");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "streamblur: error: " << e.what() << " (see --help)\n";
    return 2;
  }

  streamblur::io::install_log_capture(verbose ? AV_LOG_INFO : AV_LOG_QUIET);
  try {
    if (list_filters) {
      std::cout << "Filters (chain them with ',', options as name=value separated by ':'):\n" << streamblur::filter_list();
      return 0;
    }
    if (!help_filter.empty()) {
      std::cout << streamblur::filter_help(help_filter);
      return 0;
    }
    if (input.empty() || output.empty()) {
      std::cerr << "streamblur: error: an input and an output are required (see --help)\n";
      return 2;
    }

    streamblur::PipelineOptions opt;
    opt.input = input;
    opt.output = output;
    opt.filters = vf;
    opt.backend = backend == "cuda" ? streamblur::BackendChoice::Cuda
                  : backend == "cpu" ? streamblur::BackendChoice::Cpu
                                     : streamblur::BackendChoice::Auto;
    opt.inflight = inflight;
    opt.decoder_threads = threads;
    opt.overwrite = overwrite;
    opt.encoder.codec = codec.empty() ? streamblur::default_encoder_for(output) : codec;
    opt.encoder.crf = crf;
    opt.encoder.preset = preset;
    for (const std::string& kv : encoder_opts) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "streamblur: error: --encoder-opt needs key=value, got '" << kv << "'\n";
        return 2;
      }
      opt.encoder.options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    opt.stop = &g_stop;
    opt.note = [quiet](const std::string& s) {
      if (!quiet) std::cerr << s << "\n";
    };
    const bool show_progress = !quiet && ::isatty(STDERR_FILENO);
    if (show_progress) {
      opt.progress = [](const streamblur::Progress& p) {
        std::string total = p.total_estimate > 0 ? "/" + std::to_string(p.total_estimate) : "";
        const double speed = p.elapsed_s > 0 ? p.media_time_s / p.elapsed_s : 0;
        const double eta = p.total_estimate > 0 && p.fps > 0 ? (p.total_estimate - p.frames) / p.fps : -1;
        std::fprintf(stderr, "\rframe %lld%s  %.1f fps  speed %.2fx  elapsed %s  eta %s   ", static_cast<long long>(p.frames),
                     total.c_str(), p.fps, speed, clock_text(p.elapsed_s).c_str(), p.final ? "0:00:00" : clock_text(eta).c_str());
        if (p.final) std::fprintf(stderr, "\n");
        std::fflush(stderr);
      };
    }
    std::signal(SIGINT, on_sigint);

    const streamblur::RunStats st = streamblur::run_pipeline(opt);
    if (st.decode_warnings > 0 && !quiet)
      std::cerr << "warning: the input had " << st.decode_warnings << " damaged part(s); wrote what could be decoded\n";
    if (st.stopped_early && !quiet) std::cerr << "stopped early (interrupted); the output holds the frames done so far\n";
    if (!quiet)
      std::cerr << "done: " << st.frames << " frames in " << st.wall_s << " s (" << st.fps << " fps), backend " << st.backend
                << ", bounded by " << st.bounding_stage << "\n";

    if (!stats_json.empty()) {
      nlohmann::json j = {{"input", input},
                          {"output", output},
                          {"backend", st.backend},
                          {"filters", st.filters},
                          {"frames", st.frames},
                          {"wall_s", st.wall_s},
                          {"fps", st.fps},
                          {"input_pix_fmt", st.input_format},
                          {"processing_pix_fmt", st.processing_format},
                          {"decode_warnings", st.decode_warnings},
                          {"stopped_early", st.stopped_early},
                          {"bounding_stage", st.bounding_stage},
                          {"stages",
                           {{"decode", stage_json(st.decode)},
                            {"upload", stage_json(st.upload)},
                            {"filter", stage_json(st.filter)},
                            {"download", stage_json(st.download)},
                            {"encode", stage_json(st.encode)}}}};
      std::ofstream f(stats_json);
      f << j.dump(2) << "\n";
      if (!f) {
        std::cerr << "streamblur: error: cannot write stats to '" << stats_json << "'\n";
        return 1;
      }
    }
    return st.stopped_early ? 130 : 0;
  } catch (const std::exception& e) {
    if (!quiet && ::isatty(STDERR_FILENO)) std::cerr << "\n";  // end a progress line first
    std::cerr << "streamblur: error: " << e.what() << "\n";
    return g_stop.load() ? 130 : 1;  // interrupted (Ctrl-C before the first frame was done)
  }
}
