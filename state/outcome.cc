#include "state/outcome.h"

namespace msgx {

std::string_view OutcomeStateName(OutcomeState s) {
  switch (s) {
    case OutcomeState::kSucceeded:
      return "SUCCEEDED";
    case OutcomeState::kSkipped:
      return "SKIPPED";
    case OutcomeState::kDead:
      return "DEAD";
  }
  return "SUCCEEDED";
}

bool ParseOutcomeState(std::string_view name, OutcomeState* out) {
  if (name == "SUCCEEDED")
    *out = OutcomeState::kSucceeded;
  else if (name == "SKIPPED")
    *out = OutcomeState::kSkipped;
  else if (name == "DEAD")
    *out = OutcomeState::kDead;
  else
    return false;
  return true;
}

std::string BoundUtf8(std::string s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t cut = max;
  // Step back over continuation bytes so no sequence is split.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  return s;
}

}  // namespace msgx
