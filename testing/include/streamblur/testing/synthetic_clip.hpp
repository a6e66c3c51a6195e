#pragma once
// Deterministic synthetic media made with FFmpeg's encoders: the tests, the
// fuzzers' seeds and the benchmark make their clips at run time instead of
// committing media. Part of streamblur_testing (testing/), which is neither
// installed nor exported; the namespace is io's, as it writes media as io does.
#include <string>

extern "C" {
#include <libavutil/pixfmt.h>
#include <libavutil/rational.h>
}

namespace streamblur::io {

// Tags and dispositions of one stream of a synthetic clip (empty / 0: none).
struct SyntheticStreamTags {
  std::string language;  // "language" tag, ISO 639-2 (e.g. "fra")
  std::string title;     // "title" tag
  int disposition = 0;   // AV_DISPOSITION_* flags
};

// What write_synthetic_clip writes: size, length, codec, streams, metadata.
struct SyntheticClipSpec {
  int width = 64;
  int height = 48;
  int frames = 10;
  int fps = 30;
  AVPixelFormat pix_fmt = AV_PIX_FMT_YUV420P;
  std::string codec = "ffv1";        // ffv1, libx264, mpeg4, png, ...
  std::string preset;                // e.g. "ultrafast" for libx264
  int crf = -1;
  // More encoder options, "key=value:key=value" (av_dict_parse_string), e.g.
  // "g=12:bf=2" (a keyframe every 12 frames, 2 B-frames) or
  // "x264-params=keyint=12:open-gop=1" with ':' inside a value escaped ("\\:").
  std::string video_options;
  bool audio = false;                // adds a stereo 48 kHz audio track
  std::string audio_codec = "aac";   // aac, pcm_s16le, ...
  bool variable_frame_rate = false;  // irregular pts steps
  bool noise = false;                // moving content plus film-like grain (realistic decode load)
  AVColorRange color_range = AVCOL_RANGE_MPEG;
  AVColorSpace colorspace = AVCOL_SPC_BT709;
  AVColorPrimaries color_primaries = AVCOL_PRI_BT709;
  AVColorTransferCharacteristic color_trc = AVCOL_TRC_BT709;
  unsigned seed = 1;
  std::string title;                 // container metadata "title" when not empty
  int rotation = 0;                  // display matrix on the video stream (av_display_rotation_set degrees); 0: none
  int chapters = 0;                  // this many chapters of equal length, titled "Chapter 1", "Chapter 2", ...
  bool interlaced = false;           // frames flagged interlaced, top field first; the encoder codes fields
                                     // (libx264: MBAFF) and the stream says field order tt
  bool hdr = false;                  // HDR10 mastering display (BT.2020 primaries, 1000/0.005 cd/m2) and content
                                     // light level (1000/400) on the stream; libx265 also writes them as SEI
  AVRational sample_aspect_ratio{1, 1};  // on the encoder, the stream and every frame
  AVChromaLocation chroma_location = AVCHROMA_LOC_UNSPECIFIED;  // on the encoder and every frame
  // A text subtitle stream (after video and audio) with `subtitle_cues` cues
  // spread over the clip, "cue 1", "cue 2", ... each shown for 60 % of its
  // share: "subrip" or "ass" (mkv), "mov_text" (mp4/mov); empty: none.
  std::string subtitle_codec;
  int subtitle_cues = 3;
  SyntheticStreamTags video_tags, audio_tags, subtitle_tags;
};
// The HDR values write_synthetic_clip uses for `hdr`.
inline constexpr int kSyntheticMaxCll = 1000, kSyntheticMaxFall = 400;
inline constexpr int kSyntheticMaxLuminance = 1000;  // cd/m2
// A path with %d / %03d (image2 pattern) writes one numbered file per frame from 1, as ffmpeg does.

// Writes the clip to `path` (container from the extension). Throws AVError on failure.
void write_synthetic_clip(const std::string& path, const SyntheticClipSpec& spec);

}  // namespace streamblur::io
