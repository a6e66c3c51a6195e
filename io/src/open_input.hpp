#pragma once
// The demuxer's open, shared by MediaReader and the keyframe scan so that
// both refuse the same inputs with the same words. Internal to io.
#include <map>
#include <string>

#include "streamblur/io/av_ptr.hpp"

namespace streamblur::io {

// Opens `path` (or reads through `custom_io` where given, path then only
// names it in errors) and probes its streams. Throws AVError naming the input:
// it cannot be opened (an empty file and an MP4 without its 'moov' index are
// told apart), it is a text file, or its streams cannot be probed.
// `options`: the demuxer's and the protocol's (ReaderOptions::format_options).
AVInputFormatContextPtr open_input_format(const std::string& path, AVIOContext* custom_io = nullptr,
                                          const std::map<std::string, std::string>& options = {});

}  // namespace streamblur::io
