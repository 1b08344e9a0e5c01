// Operator-set domain names, spelled once. ONNX writes its default domain as "" or as
// "ai.onnx"; every lookup keyed by domain goes through CanonicalDomain first.
#pragma once

#include <string_view>

namespace onnx_amp {

inline constexpr std::string_view kOnnxDomain = "";               // the default domain, canonical spelling
inline constexpr std::string_view kOnnxDomainAlias = "ai.onnx";   // its other spelling
inline constexpr std::string_view kOnnxAmpDomain = "ai.onnx_amp";  // our fused gradient and update ops

inline bool IsOnnxDomain(std::string_view domain) { return domain.empty() || domain == kOnnxDomainAlias; }
// "" for both spellings of the default domain, the domain itself otherwise.
inline std::string_view CanonicalDomain(std::string_view domain) {
  return IsOnnxDomain(domain) ? kOnnxDomain : domain;
}
// How messages name a domain: "ai.onnx" for the default one.
inline std::string_view DisplayDomain(std::string_view domain) {
  return IsOnnxDomain(domain) ? kOnnxDomainAlias : domain;
}

}  // namespace onnx_amp
