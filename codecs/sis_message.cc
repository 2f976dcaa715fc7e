#include "codecs/sis_message.h"

namespace msgx::sis {

const Element* Element::Child(std::string_view child_name) const {
  for (const Element& c : children) {
    if (c.name == child_name) return &c;
  }
  return nullptr;
}

const Attribute* Element::Attr(std::string_view attr_name) const {
  for (const Attribute& a : attributes) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

TextField Element::ChildText(std::string_view child_name) const {
  TextField f;
  if (const Element* c = Child(child_name)) {
    f.presence = c->text.empty() ? Presence::kEmpty : Presence::kValue;
    f.value = c->text;
  }
  return f;
}

TextField Element::AttrText(std::string_view attr_name) const {
  TextField f;
  if (const Attribute* a = Attr(attr_name)) {
    f.presence = a->value.empty() ? Presence::kEmpty : Presence::kValue;
    f.value = a->value;
  }
  return f;
}

bool Element::IsBlank() const {
  if (!text.empty()) return false;
  for (const Attribute& a : attributes) {
    if (!a.value.empty()) return false;
  }
  for (const Element& c : children) {
    if (!c.IsBlank()) return false;
  }
  return true;
}

const Element* ScheduleRecord::Field(std::string_view name) const {
  for (const Element& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const Element* ReferenceRecord::Field(std::string_view name) const {
  for (const Element& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool IsSnapshotStyp(std::string_view styp) { return styp == "DNLD" || styp == "RESP"; }

}  // namespace msgx::sis
