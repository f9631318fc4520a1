// The special token ids, add_* flags and chat template, read the way gguf-py's
// SpecialVocab reads them: tokenizer_config.json's token strings looked up in
// tokenizer.json's added_tokens, the post-processor's template for the
// add_bos/add_eos/add_sep flags, then config.json's *_token_id for the ids
// still unknown.
#include <optional>
#include <string>
#include <vector>

#include "hf/mapped_file.h"
#include "hf/tokenizer_metadata.h"
#include "lamina/model/config.h"

namespace lamina::model::hf {
namespace {

using gguf::Value;

constexpr const char* kTypes[] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};

// GGUF key suffixes ("seperator" is the spelling GGUF files use).
std::string id_key(const std::string& type) {
  if (type == "unk") return "tokenizer.ggml.unknown_token_id";
  if (type == "sep") return "tokenizer.ggml.seperator_token_id";
  if (type == "pad") return "tokenizer.ggml.padding_token_id";
  return "tokenizer.ggml." + type + "_token_id";
}

class SpecialVocab {
 public:
  explicit SpecialVocab(uint32_t n_vocab) : n_vocab_(n_vocab) {}

  void set_id(const std::string& type, const Json* id) {
    if (!id || !id->is_number_unsigned()) return;
    const uint64_t v = id->get<uint64_t>();
    if (v >= n_vocab_) return;  // the converter skips ids outside the vocabulary
    for (const auto& [t, existing] : ids_) {
      if (t == type) return;  // the first source wins
    }
    ids_.emplace_back(type, static_cast<uint32_t>(v));
  }
  void set_add(const std::string& type, bool value) {
    for (auto& [t, v] : adds_) {
      if (t == type) {
        v = value;
        return;
      }
    }
    adds_.emplace_back(type, value);
  }
  void write(MetadataBuilder& out) const {
    for (const auto& [type, id] : ids_) out.set(id_key(type), Value::u32(id));
    for (const auto& [type, v] : adds_) out.set("tokenizer.ggml.add_" + type + "_token", Value::boolean(v));
  }

 private:
  uint32_t n_vocab_;
  std::vector<std::pair<std::string, uint32_t>> ids_;
  std::vector<std::pair<std::string, bool>> adds_;
};

std::optional<std::string> token_string(const Json& config, const std::string& key) {
  const auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}

const Json* special_token_id(const Json& template_entry) {
  const auto it = template_entry.find("SpecialToken");
  if (it == template_entry.end() || !it->is_object() || !it->contains("id")) return nullptr;
  return &(*it)["id"];
}

// The crude reading of TemplateProcessing the converter does: a special token
// first in the single-sequence template means add_bos, one last means
// add_eos, one between A and B in the pair template means add_sep.
void read_post_processor(const Json& tokenizer, const std::optional<std::string>& bos, const std::optional<std::string>& eos,
                         const std::optional<std::string>& sep, const std::optional<std::string>& cls, SpecialVocab& v) {
  const auto post = tokenizer.find("post_processor");
  if (post == tokenizer.end() || !post->is_object()) return;
  std::vector<Json> processors;
  if (post->contains("processors") && (*post)["processors"].is_array()) {
    for (const Json& p : (*post)["processors"]) processors.push_back(p);
  } else {
    processors.push_back(*post);
  }
  for (const Json& p : processors) {
    const std::string type = p.value("type", "");
    if (type == "RobertaProcessing") {
      v.set_add("bos", true);
      v.set_add("eos", true);
      v.set_add("sep", true);
      continue;
    }
    if (type != "TemplateProcessing") continue;
    const Json single = p.value("single", Json::array());
    const Json pair = p.value("pair", Json::array());
    std::optional<std::string> first, last;
    if (single.is_array() && single.size() > 1) {
      if (const Json* id = special_token_id(single.front()); id && id->is_string()) {
        first = id->get<std::string>();
        v.set_add("bos", first == bos || first == cls);
      }
      if (const Json* id = special_token_id(single.back()); id && id->is_string()) {
        last = id->get<std::string>();
        v.set_add("eos", last == eos);
      }
    }
    if (!pair.is_array() || pair.empty()) continue;
    std::size_t begin = 0, end = pair.size();
    if (first && special_token_id(pair.front()) && *special_token_id(pair.front()) == *first) begin = 1;
    if (last && end > begin && special_token_id(pair.back()) && *special_token_id(pair.back()) == *last) --end;
    if (end - begin < 3) continue;
    if (!pair[begin].contains("Sequence") || !pair[end - 1].contains("Sequence")) continue;
    // Between A and B: one or two special tokens.
    auto separates = [&](std::size_t i) {
      const Json* id = special_token_id(pair[i]);
      return id && id->is_string() && (id->get<std::string>() == sep || id->get<std::string>() == eos);
    };
    bool add_sep = separates(begin + 1) && !last;
    if (end - begin == 4 && separates(begin + 2)) add_sep = true;
    v.set_add("sep", add_sep);
  }
}

}  // namespace

void add_special_tokens(const std::filesystem::path& dir, const Json& tokenizer, const HfConfig& config,
                        uint32_t n_vocab, MetadataBuilder& out) {
  Json tokenizer_config = Json::object();
  const auto config_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path))
    tokenizer_config = parse_json_object(read_text_file(config_path), config_path.string());

  std::optional<std::string> bos = token_string(tokenizer_config, "bos_token");
  std::optional<std::string> eos = token_string(tokenizer_config, "eos_token");
  std::optional<std::string> sep = token_string(tokenizer_config, "sep_token");
  std::optional<std::string> cls = token_string(tokenizer_config, "cls_token");
  if (!bos && cls) bos = cls;
  if (!eos && sep) eos = sep;

  SpecialVocab v(n_vocab);
  // Hugging Face adds only what the post-processor (or the config) asks for: say so,
  // rather than leave llama.cpp's per-pre-tokenizer defaults to decide.
  v.set_add("bos", false);
  v.set_add("eos", false);
  read_post_processor(tokenizer, bos, eos, sep, cls, v);
  const Json added = tokenizer.value("added_tokens", Json::array());
  for (const std::string type : kTypes) {
    if (const auto it = tokenizer_config.find("add_" + type + "_token"); it != tokenizer_config.end() && it->is_boolean())
      v.set_add(type, it->get<bool>());
    std::optional<std::string> text = token_string(tokenizer_config, type + "_token");
    if (type == "bos") text = bos;
    if (type == "eos") text = eos;
    if (!text) continue;
    for (const Json& t : added) {
      if (t.is_object() && t.value("content", "") == *text) {
        v.set_id(type, &t["id"]);
        break;
      }
    }
  }
  for (const std::string type : kTypes) v.set_id(type, config.find(type + "_token_id"));
  v.write(out);

  std::optional<std::string> chat_template;
  if (const auto jinja = dir / "chat_template.jinja"; std::filesystem::exists(jinja)) chat_template = read_text_file(jinja);
  if (const auto it = tokenizer_config.find("chat_template"); it != tokenizer_config.end() && it->is_string())
    chat_template = it->get<std::string>();
  if (chat_template) out.set("tokenizer.chat_template", Value::string(*chat_template));
}

}  // namespace lamina::model::hf
