#include "base/status.h"

namespace msgx {

std::string_view ErrorClassName(ErrorClass c) {
  switch (c) {
    case ErrorClass::kOk:
      return "OK";
    case ErrorClass::kMalformed:
      return "MALFORMED";
    case ErrorClass::kProtocol:
      return "PROTOCOL";
    case ErrorClass::kUnsupported:
      return "UNSUPPORTED";
    case ErrorClass::kCodecError:
      return "CODEC_ERROR";
    case ErrorClass::kNotFound:
      return "NOT_FOUND";
    case ErrorClass::kInfra:
      return "INFRA";
    case ErrorClass::kConfig:
      return "CONFIG";
    case ErrorClass::kUsage:
      return "USAGE";
    case ErrorClass::kInternal:
      return "INTERNAL";
  }
  return "INTERNAL";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(ErrorClassName(cls_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace msgx
