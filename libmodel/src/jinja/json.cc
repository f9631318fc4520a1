// |tojson: Python's json.dumps, which transformers calls with
// ensure_ascii=False and no key sorting unless the template asks.
#include <algorithm>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace lamina::model::jinja {
namespace {

class JsonWriter {
 public:
  explicit JsonWriter(const JsonFormat& format) : f_(format) {}

  std::string run(const Value& v) {
    write(v, 0);
    return std::move(out_);
  }

 private:
  void newline(int level) {
    if (!f_.indent) return;
    out_.push_back('\n');
    for (int i = 0; i < level; ++i) out_ += *f_.indent;
  }

  void write_string(const std::string& s) {
    if (!f_.ensure_ascii || text::is_ascii(s)) {
      out_ += text::json_quote(s);
      return;
    }
    char esc[16];
    const auto put = [&](unsigned unit) {
      std::snprintf(esc, sizeof esc, "\\u%04x", unit);
      out_ += esc;
    };
    out_.push_back('"');
    for (char32_t c : text::decode(s)) {
      if (c < 0x80) {
        const std::string quoted = text::json_quote(std::string(1, static_cast<char>(c)));
        out_.append(quoted, 1, quoted.size() - 2);
      } else if (c >= 0x10000) {  // a surrogate pair, as Python writes it
        const unsigned v = static_cast<unsigned>(c) - 0x10000;
        put(0xD800 + (v >> 10));
        put(0xDC00 + (v & 0x3FF));
      } else {
        put(static_cast<unsigned>(c));
      }
    }
    out_.push_back('"');
  }

  void write(const Value& v, int level) {
    check_string_size(out_.size());
    switch (v.kind()) {
      case Value::Kind::None:
        out_ += "null";
        return;
      case Value::Kind::Bool:
        out_ += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::Int:
        out_ += std::to_string(v.as_int());
        return;
      case Value::Kind::Float: {
        const double d = v.as_float();
        out_ += d != d ? "NaN" : d == 1.0 / 0.0 ? "Infinity" : d == -1.0 / 0.0 ? "-Infinity" : text::float_repr(d);
        return;
      }
      case Value::Kind::String:
        write_string(v.as_string());
        return;
      case Value::Kind::List: {
        const auto& items = v.as_list().items;
        if (items.empty()) {
          out_ += "[]";
          return;
        }
        out_.push_back('[');
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (i) out_ += f_.item_separator;
          newline(level + 1);
          write(items[i], level + 1);
        }
        newline(level);
        out_.push_back(']');
        return;
      }
      case Value::Kind::Dict: {
        std::vector<const std::pair<std::string, Value>*> entries;
        for (const auto& e : v.as_dict().entries) entries.push_back(&e);
        if (entries.empty()) {
          out_ += "{}";
          return;
        }
        if (f_.sort_keys)
          std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
        out_.push_back('{');
        for (std::size_t i = 0; i < entries.size(); ++i) {
          if (i) out_ += f_.item_separator;
          newline(level + 1);
          write_string(entries[i]->first);
          out_ += f_.key_separator;
          write(entries[i]->second, level + 1);
        }
        newline(level);
        out_.push_back('}');
        return;
      }
      default:
        throw Error("Object of type " + type_name(v) + " is not JSON serializable");
    }
  }

  const JsonFormat& f_;
  std::string out_;
};

}  // namespace

std::string to_json(const Value& value, const JsonFormat& format) { return JsonWriter(format).run(value); }

}  // namespace lamina::model::jinja
