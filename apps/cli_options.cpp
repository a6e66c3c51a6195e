#include "cli_options.hpp"

#include <charconv>
#include <map>
#include <set>

#include "streamblur/io/reader.hpp"

namespace streamblur::cli {
namespace {

void add_encoder_options(CLI::App& app, CommonOptions& c) {
  app.add_option("-c,--codec", c.codec,
                 "video encoder by FFmpeg name (also -c:v, -vcodec; default: the container's, e.g. libx264 for mp4 and "
                 "mkv, libvpx-vp9 for webm, the image encoder for image outputs)");
  app.add_option("--crf", c.crf, "constant rate factor for encoders that have one (libx264 default here: 18)")
      ->check(CLI::Range(0, 63));
  app.add_option("--preset", c.preset, "encoder preset, e.g. ultrafast ... veryslow for libx264");
  app.add_option("--encoder-opt", c.encoder_opts, "encoder option key=value (repeatable)");
  app.add_option("--input-opt", c.input_opts,
                 "option of the input's demuxer or protocol, key=value (repeatable; as ffmpeg's options before -i)");
  app.add_option("--output-opt", c.output_opts,
                 "option of the output's muxer or protocol, key=value (repeatable; movflags=+faststart, pkt_size=1316)");
  app.add_option("-f,--format", c.format,
                 "output container by FFmpeg name (mp4, matroska, webm, ...); default: from the output's extension, "
                 "which a pipe (-) does not have; with --help-filter: text or markdown");
}

void add_trim_options(CLI::App& app, CommonOptions& c) {
  app.add_option_function<std::string>(
         "--ss", [&c](const std::string& v) { c.start = v; },
         "start at TIME (also -ss, as ffmpeg's input -ss): seek to the keyframe before it, decode, drop the frames "
         "before it; the output's timestamps start near 0. TIME: seconds (12.5) or [HH:]MM:SS[.m] (1:02.5)")
      ->type_name("TIME");
  app.add_option_function<std::string>(
         "-t", [&c](const std::string& v) { c.duration = v; },
         "take TIME of the input from the start (ffmpeg's -t): frames and copied packets before start + TIME")
      ->type_name("TIME");
  app.add_option_function<std::string>(
         "--frames", [&c](const std::string& v) { c.frames = v; },
         "stop after N video frames (also -frames:v, -vframes); copied streams end where frame N+1 would begin")
      ->type_name("N");
}

void add_report_options(CLI::App& app, CommonOptions& c) {
  app.add_flag("-q,--quiet", c.quiet, "no progress line and no notes (as -loglevel error)");
  app.add_flag("-v,--verbose", c.verbose,
               "let FFmpeg print its own log, and say where in streamblur's source an error was raised");
  app.add_option("--loglevel", c.loglevel,
                 "quiet, panic, fatal, error, warning, info (default), verbose or debug, as ffmpeg's -loglevel "
                 "(also -v LEVEL): error and below print no notes and no progress line; quiet prints nothing; "
                 "verbose and debug also let FFmpeg print its own log")
      ->type_name("LEVEL");
  app.add_option("--progress", c.progress_url,
                 "write progress as ffmpeg's -progress does (frame=, fps=, out_time=, speed=, progress=continue|end "
                 "lines) to FILE, - or pipe:1 (standard output), or pipe:2 (standard error)")
      ->type_name("URL");
  app.add_flag("--nostats", c.no_stats, "no progress line on a terminal (also -nostats)");
}

}  // namespace

void add_common_options(CLI::App& app, CommonOptions& c) {
  app.add_option("--vf", c.vf,
                 "filter chain, e.g. \"gblur=sigma=2,boxblur=radius=3\" (also -vf, -filter:v; see --list-filters)");
  add_encoder_options(app, c);
  app.add_option("--backend", c.backend, "auto (CUDA when a device is present), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app.add_option("--hwdec", c.hwdec,
                 "decoder: auto (NVDEC when the CUDA backend runs and it takes the codec), nvdec (required) or none "
                 "(CPU); -hwaccel cuda is --hwdec nvdec")
      ->check(CLI::IsMember({"auto", "nvdec", "none"}));
  app.add_option("--inflight", c.inflight, "frames in flight (slots of pinned + device memory)")->check(CLI::Range(1, 64));
  app.add_option("--threads", c.threads, "decoder threads (0 = automatic)")->check(CLI::Range(0, 256));
  app.add_option("--segments", c.segments,
                 "cut the input at keyframes into N spans, run them at once and join them (default 1); auto: as "
                 "many as pay, said in a note")
      ->transform(CLI::Validator(
          [](std::string& s) -> std::string {
            if (s == "auto") {
              s = std::to_string(kSegmentsAuto);
              return "";
            }
            int n = 0;
            if (!CLI::detail::lexical_cast(s, n) || n < 1 || n > 64) return "must be auto or 1 to 64, got " + s;
            return "";
          },
          "N|auto"));
  add_trim_options(app, c);
  app.add_flag("-y,--overwrite", c.overwrite, "overwrite outputs that exist");
  app.add_flag("-n,--no-overwrite", c.never_overwrite,
               "never overwrite an output that exists (the default; as ffmpeg's -n)");
  app.add_flag("--re", c.realtime,
               "read the input at its native frame rate, as ffmpeg -re does for live streaming (a 10 s clip takes 10 s)");
  app.add_flag("--strict-regions", c.strict_regions,
               "a regions file that can never match the video is an error, not a warning");
  add_report_options(app, c);
}

std::optional<std::string> resolve_log_level(CommonOptions& c) {
  static const std::map<std::string, LogLevel> levels = {
      {"quiet", LogLevel::Quiet},   {"-8", LogLevel::Quiet},      {"panic", LogLevel::Error},
      {"0", LogLevel::Error},       {"fatal", LogLevel::Error},   {"8", LogLevel::Error},
      {"error", LogLevel::Error},   {"16", LogLevel::Error},      {"warning", LogLevel::Warning},
      {"24", LogLevel::Warning},    {"info", LogLevel::Info},     {"32", LogLevel::Info},
      {"verbose", LogLevel::Verbose}, {"40", LogLevel::Verbose},  {"debug", LogLevel::Debug},
      {"48", LogLevel::Debug},      {"trace", LogLevel::Debug},   {"56", LogLevel::Debug}};
  if (c.overwrite && c.never_overwrite) return "-y and -n contradict each other: choose one";
  c.level = LogLevel::Info;
  if (!c.loglevel.empty()) {
    // FFmpeg's flag prefixes ("repeat+level+info") change how lines look, not which.
    std::string name = c.loglevel;
    if (const auto plus = name.rfind('+'); plus != std::string::npos) name = name.substr(plus + 1);
    const auto it = levels.find(name);
    if (it == levels.end())
      return "--loglevel: '" + c.loglevel + "' is not a level (quiet, panic, fatal, error, warning, info, verbose, debug)";
    c.level = it->second;
  }
  if (c.quiet && c.level > LogLevel::Error) c.level = LogLevel::Error;
  if (c.verbose && c.level < LogLevel::Verbose) c.level = LogLevel::Verbose;
  c.verbose = c.level >= LogLevel::Verbose;
  c.quiet = c.level < LogLevel::Info;
  return std::nullopt;
}

namespace {

std::optional<std::string> fill_span(const CommonOptions& c, PipelineOptions& opt) {
  try {
    if (c.start) opt.start_seconds = parse_time(*c.start);
  } catch (const std::invalid_argument& e) {
    return std::string("-ss: ") + e.what();
  }
  try {
    if (c.duration) opt.duration_seconds = parse_time(*c.duration);
  } catch (const std::invalid_argument& e) {
    return std::string("-t: ") + e.what();
  }
  if (opt.duration_seconds && *opt.duration_seconds <= 0)
    return "-t: the duration must be more than 0 seconds, got '" + *c.duration + "'";
  // The span's range (a usage error, before anything is opened).
  for (const auto& [flag, span] : {std::pair{"-ss: ", io::ReadSpan{opt.start_seconds, {}, {}}},
                                   std::pair{"-t: ", io::ReadSpan{{}, opt.duration_seconds, {}}}}) {
    try {
      io::check_span(span);
    } catch (const std::invalid_argument& e) {
      return flag + std::string(e.what());
    }
  }
  if (c.frames) {
    const std::string& f = *c.frames;
    long long n = 0;
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
    if (f.empty() || ec != std::errc() || end != f.data() + f.size())
      return "--frames: '" + f + "' is not a whole number of frames";
    if (n < 1) return "--frames must be at least 1, got " + f;
    opt.max_frames = n;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> fill_pipeline_options(const CommonOptions& c, PipelineOptions& opt) {
  opt.filters = c.vf;
  opt.backend = c.backend == "cuda"  ? BackendChoice::Cuda
                : c.backend == "cpu" ? BackendChoice::Cpu
                                     : BackendChoice::Auto;
  opt.hwdec = parse_hwdec(c.hwdec);
  opt.inflight = c.inflight;
  opt.segments = c.segments;
  opt.decoder_threads = c.threads;
  opt.overwrite = c.overwrite;
  opt.realtime = c.realtime;
  opt.strict_regions = c.strict_regions;
  if (auto err = fill_span(c, opt)) return err;
  opt.encoder.codec = c.codec;
  opt.encoder.crf = c.crf;
  opt.encoder.preset = c.preset;
  opt.encoder.format_name = c.format;
  const std::pair<const std::vector<std::string>*, std::map<std::string, std::string>*> pairs[] = {
      {&c.encoder_opts, &opt.encoder.options},
      {&c.input_opts, &opt.input_options},
      {&c.output_opts, &opt.encoder.format_options}};
  const char* flags[] = {"--encoder-opt", "--input-opt", "--output-opt"};
  for (std::size_t i = 0; i < std::size(pairs); ++i)
    for (const std::string& kv : *pairs[i].first) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) return std::string(flags[i]) + " needs key=value, got '" + kv + "'";
      (*pairs[i].second)[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  return std::nullopt;
}

namespace {

// FFmpeg's single-dash names and the option each stands for.
const std::map<std::string, std::string>& ffmpeg_names() {
  static const std::map<std::string, std::string> names = {
      {"-vf", "--vf"},           {"-filter:v", "--vf"},      {"-c:v", "--codec"},        {"-codec:v", "--codec"},
      {"-vcodec", "--codec"},    {"-codec", "--codec"},      {"-frames:v", "--frames"},  {"-vframes", "--frames"},
      {"-frames", "--frames"},   {"-loglevel", "--loglevel"}, {"-progress", "--progress"}, {"-hwaccel", "--hwdec"},
      {"-crf", "--crf"},         {"-preset", "--preset"},    {"-threads", "--threads"},  {"-ss", "--ss"},
      {"-re", "--re"},           {"-nostats", "--nostats"}};
  return names;
}

bool is_level_name(const std::string& s) {
  static const std::set<std::string> names = {"quiet", "panic", "fatal", "error", "warning",
                                              "info",  "verbose", "debug", "trace"};
  const auto plus = s.rfind('+');
  const std::string name = plus == std::string::npos ? s : s.substr(plus + 1);
  if (names.count(name)) return true;
  long long n = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  return !name.empty() && ec == std::errc() && end == name.data() + name.size();
}

}  // namespace

std::vector<std::string> ffmpeg_style_arguments(int argc, char** argv) {
  std::vector<std::string> in(argv, argv + argc), out;
  out.push_back(in.empty() ? "streamblur" : in[0]);
  for (std::size_t i = 1; i < in.size(); ++i) {
    const std::string& a = in[i];
    if (a == "--") {
      out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(i), in.end());
      break;
    }
    if (a == "-hide_banner" || a == "-nostdin" || a == "-stats") continue;
    const auto eq = a.find('=');
    const std::string name = a.substr(0, eq);
    if (const auto it = ffmpeg_names().find(name); it != ffmpeg_names().end()) {
      out.push_back(it->second + (eq == std::string::npos ? "" : a.substr(eq)));
      // -hwaccel's values: cuda and nvdec are NVDEC, none is the CPU.
      if (it->second == "--hwdec" && eq == std::string::npos && i + 1 < in.size()) {
        const std::string& v = in[++i];
        out.push_back(v == "cuda" ? "nvdec" : v);
      }
      continue;
    }
    // ffmpeg's "-v LEVEL" is -loglevel; a bare -v stays streamblur's verbose flag.
    if (a == "-v" && i + 1 < in.size() && is_level_name(in[i + 1])) {
      out.push_back("--loglevel");
      continue;
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace streamblur::cli
