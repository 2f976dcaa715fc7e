#include "codecs/sis_decoder.h"

#include <charconv>
#include <exception>
#include <new>
#include <pugixml.hpp>
#include <string>
#include <utility>
#include <vector>

#include "codecs/sis_body_decoder.h"
#include "codecs/sis_fields.h"
#include "codecs/sis_time.h"
#include "codecs/sis_xml.h"

namespace msgx::sis {

struct Envelope::Doc {
  std::string text;  // UTF-8, parsed in place: must outlive `xml`
  pugi::xml_document xml;
  pugi::xml_node msg;
};

Envelope::Envelope() : doc_(std::make_unique<Doc>()) {}
Envelope::Envelope(Envelope&&) noexcept = default;
Envelope& Envelope::operator=(Envelope&&) noexcept = default;
Envelope::~Envelope() = default;

namespace {

using pugi::xml_node;
using xml::CheckCharRefs;
using xml::DepthWithin;
using xml::Quoted;
using xml::StartTagBound;
using xml::TextOf;
using xml::Trim;
using xml::Upper;

Status DecodeMeta(xml_node meta, const TimeZone& zone, Meta* m) {
  xml_node sndr, seqn, dttm, type, styp;
  for (xml_node c = meta.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const std::string_view n = c.name();
    xml_node* slot = n == "SNDR"   ? &sndr
                     : n == "SEQN" ? &seqn
                     : n == "DTTM" ? &dttm
                     : n == "TYPE" ? &type
                     : n == "STYP" ? &styp
                                   : nullptr;
    if (slot != nullptr && !*slot) {
      *slot = c;
      continue;
    }
    if (slot != nullptr)
      return Status::Malformed("META/" + std::string(n) + ": given more than once");
    m->extra.emplace_back();
    Status s = ConvertElement(c, zone, "META", &m->extra.back());
    if (!s.ok()) return s;
  }
  auto required = [](xml_node node, const char* name, std::string* out) -> Status {
    if (!node) return Status::Malformed(std::string("META/") + name + ": missing");
    *out = TextOf(node);
    if (out->empty()) return Status::Malformed(std::string("META/") + name + ": empty");
    return Status::Ok();
  };
  Status s;
  if (!(s = required(type, "TYPE", &m->type)).ok()) return s;
  if (!(s = required(styp, "STYP", &m->styp)).ok()) return s;
  if (!(s = required(sndr, "SNDR", &m->sndr)).ok()) return s;
  if (!(s = required(seqn, "SEQN", &m->seqn)).ok()) return s;
  if (!(s = required(dttm, "DTTM", &m->dttm)).ok()) return s;
  m->type = Upper(m->type);
  m->styp = Upper(m->styp);
  std::int64_t seq = 0;
  if (m->seqn.find_first_not_of("0123456789") == std::string::npos && m->seqn.size() <= 18) {
    std::from_chars(m->seqn.data(), m->seqn.data() + m->seqn.size(), seq);
    m->seqn_number = seq;
  }
  auto local = ParseLocalDateTime14(m->dttm);
  if (!local) {
    return Status::Malformed("META/DTTM: bad time " + Quoted(m->dttm) +
                             " (expected yyyyMMddHHmmss)");
  }
  m->dttm_utc_micros = zone.LocalToUtc(*local) * 1'000'000;
  return Status::Ok();
}

}  // namespace

SisDecoder::SisDecoder(const TimeZone& zone, DecoderOptions options)
    : zone_(&zone), options_(options) {}

Result<Envelope> SisDecoder::DecodeEnvelope(std::string_view input, InputOrigin origin,
                                            std::string_view encoding_override) const {
  try {
    if (static_cast<std::int64_t>(input.size()) > options_.max_bytes) {
      return Status::CodecError("message is " + std::to_string(input.size()) +
                                " bytes, over codec.max-bytes " +
                                std::to_string(options_.max_bytes));
    }
    if (Trim(input).empty()) return Status::Malformed("empty message");
    Envelope env;
    Result<std::string> text = ToUtf8(input, origin, encoding_override);
    if (!text.ok()) return text.status();
    env.doc_->text = std::move(text).value();
    std::string& buf = env.doc_->text;
    if (const std::size_t nul = buf.find('\0'); nul != std::string::npos) {
      return Status::Malformed("NUL byte at offset " + std::to_string(nul));
    }
    if (Status refs = CheckCharRefs(buf); !refs.ok()) return refs;
    // Counted before the parse, which rewrites the buffer in place.
    const auto max_depth = static_cast<std::size_t>(options_.max_depth);
    const bool depth_checked = StartTagBound(buf, max_depth) < max_depth;
    const unsigned flags = pugi::parse_default | pugi::parse_doctype;
    pugi::xml_parse_result pr =
        env.doc_->xml.load_buffer_inplace(buf.data(), buf.size(), flags, pugi::encoding_utf8);
    if (!pr) {
      return Status::Malformed(std::string("not well-formed XML: ") + pr.description() +
                               " at offset " + std::to_string(pr.offset));
    }
    xml_node root;
    int roots = 0;
    for (xml_node c = env.doc_->xml.first_child(); c; c = c.next_sibling()) {
      if (c.type() == pugi::node_doctype) return Status::Malformed("DOCTYPE is not allowed");
      if (c.type() == pugi::node_element) {
        if (roots++ == 0) root = c;
      } else if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) {
        return Status::Malformed("not well-formed XML: text outside the root element");
      }
    }
    if (roots == 0) return Status::Malformed("not well-formed XML: no root element");
    if (roots > 1) return Status::Malformed("not well-formed XML: more than one root element");
    if (!depth_checked && !DepthWithin(env.doc_->xml, options_.max_depth)) {
      return Status::Malformed("nesting deeper than " + std::to_string(options_.max_depth) +
                               " levels");
    }
    if (std::string_view(root.name()) != "MSG") {
      return Status::Malformed("root element is <" + std::string(root.name()) +
                               ">, expected <MSG>");
    }
    env.doc_->msg = root;
    xml_node meta;
    for (xml_node c = root.first_child(); c; c = c.next_sibling()) {
      if (c.type() == pugi::node_element && std::string_view(c.name()) == "META") {
        if (meta) return Status::Malformed("META: given more than once");
        meta = c;
      }
    }
    if (!meta) return Status::Malformed("no META");
    Status s = DecodeMeta(meta, *zone_, &env.meta_);
    if (!s.ok()) return s;
    return env;
  } catch (const std::bad_alloc&) {
    return Status::CodecError("internal decoder failure: out of memory");
  } catch (const std::exception& e) {
    return Status::CodecError(std::string("internal decoder failure: ") + e.what());
  } catch (...) {
    return Status::CodecError("internal decoder failure");
  }
}

Result<DecodedMessage> SisDecoder::DecodeBody(Envelope envelope) const {
  try {
    const Meta& meta = envelope.meta_;
    if (!IsSupported(meta.type, meta.styp)) {
      return Status::Unsupported("no handler for " + meta.type + "-" + meta.styp);
    }
    DecodedMessage out;
    if (Status s = DecodeBodyOf(envelope.doc_->msg, *zone_, meta, &out); !s.ok()) return s;
    out.meta = std::move(envelope.meta_);
    return out;
  } catch (const std::bad_alloc&) {
    return Status::CodecError("internal decoder failure: out of memory");
  } catch (const std::exception& e) {
    return Status::CodecError(std::string("internal decoder failure: ") + e.what());
  } catch (...) {
    return Status::CodecError("internal decoder failure");
  }
}

Result<DecodedMessage> SisDecoder::Decode(std::string_view input, InputOrigin origin,
                                          std::string_view encoding_override) const {
  Result<Envelope> env = DecodeEnvelope(input, origin, encoding_override);
  if (!env.ok()) return env.status();
  return DecodeBody(std::move(env).value());
}

}  // namespace msgx::sis
