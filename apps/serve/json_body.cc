#include "json_body.h"

#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api_error.h"

namespace lamina::serve {
namespace {

using json = nlohmann::json;

// Builds the document from nlohmann's SAX events, refusing it as soon as it
// breaks a limit. (nlohmann's callback parser, the other way to see depth,
// rescans the parent array at every object's end: quadratic time.)
class DocumentBuilder {
 public:
  explicit DocumentBuilder(const JsonLimits& limits) : limits_(limits) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(json::number_integer_t v) { return add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return add(json(v)); }
  bool string(std::string& v) { return add(json(std::move(v))); }
  bool binary(json::binary_t&) { return refuse("The JSON body holds binary data."); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& name) {
    key_ = std::move(name);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    return refuse(std::string("We could not parse the JSON body of your request: ") + e.what());
  }

  json take() { return std::move(root_); }
  const std::optional<std::string>& error() const { return error_; }

 private:
  bool refuse(std::string why) {
    if (!error_) error_ = std::move(why);
    return false;
  }

  // Puts `v` into the open container (or makes it the document); returns
  // where it now lives, null when refused.
  json* place(json&& v) {
    if (++values_ > limits_.max_values) {
      refuse("The JSON body holds more than " + std::to_string(limits_.max_values) + " values.");
      return nullptr;
    }
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      auto& items = parent.get_ref<json::array_t&>();
      items.push_back(std::move(v));
      return &items.back();
    }
    auto [it, inserted] = parent.get_ref<json::object_t&>().emplace(std::move(key_), std::move(v));
    if (!inserted) {
      refuse("The JSON body has the member '" + it->first + "' more than once in one object.");
      return nullptr;
    }
    return &it->second;
  }

  bool add(json&& v) { return place(std::move(v)) != nullptr; }

  bool open(json&& container) {
    if (static_cast<int>(open_.size()) >= limits_.max_depth)
      return refuse("The JSON body nests deeper than " + std::to_string(limits_.max_depth) + " levels.");
    if (++containers_ > limits_.max_containers)
      return refuse("The JSON body holds more than " + std::to_string(limits_.max_containers) +
                    " objects and arrays.");
    json* placed = place(std::move(container));
    if (!placed) return false;
    open_.push_back(placed);
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  const JsonLimits& limits_;
  json root_;
  std::vector<json*> open_;  // the containers being filled, outermost first
  std::string key_;
  std::size_t values_ = 0;
  std::size_t containers_ = 0;
  std::optional<std::string> error_;
};

}  // namespace

json parse_json_body(std::string_view body, const JsonLimits& limits) {
  // nlohmann's lexer takes a NUL byte for the end of the input: refuse it
  // first, or `{...}\0garbage` would pass. (JSON text never holds one.)
  if (const void* nul = std::memchr(body.data(), '\0', body.size()))
    throw bad_request("The JSON body holds a NUL byte (at byte " +
                      std::to_string(static_cast<const char*>(nul) - body.data()) + ").");
  DocumentBuilder builder(limits);
  const bool ok = json::sax_parse(body.begin(), body.end(), &builder, json::input_format_t::json, /*strict=*/true);
  if (!ok || builder.error())
    throw bad_request(builder.error().value_or("We could not parse the JSON body of your request."));
  json doc = builder.take();
  if (!doc.is_object()) throw bad_request("The JSON body of your request must be an object.");
  return doc;
}

}  // namespace lamina::serve
