#include "jinja/renderer.h"

#include <algorithm>

#include "jinja/builtins.h"
#include "lamina/model/chat_template.h"

namespace lamina::model::jinja {
namespace {

// Variables visible at one level: the template's top level, one loop
// iteration, a macro call. Jinja gives each loop iteration a fresh scope, so
// a `set` inside a loop does not outlive the iteration (namespace() does).
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}

  const Value* find(std::string_view name) const {
    for (const Scope* s = this; s; s = s->parent_) {
      for (const auto& [k, v] : s->vars_)
        if (k == name) return &v;
    }
    return nullptr;
  }

  void set(std::string_view name, Value value) {
    for (auto& [k, v] : vars_) {
      if (k == name) {
        v = std::move(value);
        return;
      }
    }
    vars_.emplace_back(std::string(name), std::move(value));
  }

  const Scope* parent() const { return parent_; }
  const std::vector<std::pair<std::string, Value>>& vars() const { return vars_; }

 private:
  const Scope* parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};

ChatTemplateError located(SourceLocation where, const Error& e) {
  const auto kind =
      dynamic_cast<const Unsupported*>(&e) ? ChatTemplateError::Kind::Unsupported : ChatTemplateError::Kind::Render;
  return ChatTemplateError(kind, "chat template " + to_string(where) + ": " + e.what());
}

class Renderer {
 public:
  explicit Renderer(const Variables& variables) : variables_(variables), budget_(kRenderBudget) {}

  std::string run(const StmtList& body) {
    Scope root(nullptr);
    root_ = &root;
    std::string out;
    out_ = &out;
    exec_list(body, root);
    return out;
  }

 private:
  enum class Flow { Normal, Break, Continue };

  class Deeper {
   public:
    explicit Deeper(Renderer& r) : r_(r) {
      if (++r_.depth_ > kMaxRenderDepth)
        throw Error("the template nests or recurses deeper than " + std::to_string(kMaxRenderDepth) + " levels");
    }
    ~Deeper() { --r_.depth_; }
    Deeper(const Deeper&) = delete;
    Deeper& operator=(const Deeper&) = delete;

   private:
    Renderer& r_;
  };

  // Sends output into a buffer for the lifetime of the object.
  class Capture {
   public:
    explicit Capture(Renderer& r) : r_(r), saved_(r.out_) { r_.out_ = &buffer_; }
    ~Capture() { r_.out_ = saved_; }
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;
    std::string take() { return std::move(buffer_); }

   private:
    Renderer& r_;
    std::string* saved_;
    std::string buffer_;
  };

  void write(std::string_view s) {
    if (out_->size() + s.size() > kMaxStringBytes)
      throw Error("the rendered text is longer than " + std::to_string(kMaxStringBytes >> 20) + " MiB");
    out_->append(s);
  }

  std::string capture(const StmtList& body, Scope& scope) {
    Capture c(*this);
    exec_list(body, scope);
    return c.take();
  }

  Value lookup(std::string_view name, const Scope& scope) const {
    if (const Value* v = scope.find(name)) return *v;
    for (const auto& [k, v] : variables_)
      if (k == name) return v;
    if (is_global_function(name)) {
      auto fn = std::make_shared<CallableData>();
      fn->kind = CallableData::Kind::Builtin;
      fn->name = std::string(name);
      return Value::callable(std::move(fn));
    }
    return Value::undefined(quote_name(name) + " is undefined");
  }

  // Statements.

  Flow exec_list(const StmtList& list, Scope& scope) {
    for (const StmtPtr& s : list) {
      const Flow f = exec(*s, scope);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt& s, Scope& scope) {
    try {
      Deeper deeper(*this);
      budget_.charge(1);
      return std::visit([&](const auto& node) { return exec_node(node, scope); }, s.node);
    } catch (const Error& e) {
      throw located(s.where, e);
    }
  }

  Flow exec_node(const TextStmt& s, Scope&) {
    write(s.text);
    return Flow::Normal;
  }

  Flow exec_node(const OutputStmt& s, Scope& scope) {
    const Value v = eval(*s.expr, scope);
    write(v.is_string() ? v.as_string() : to_str(v));
    return Flow::Normal;
  }

  Flow exec_node(const IfStmt& s, Scope& scope) {
    for (const auto& [condition, body] : s.branches)
      if (truthy(eval(*condition, scope))) return exec_list(body, scope);
    return exec_list(s.otherwise, scope);
  }

  Flow exec_node(const ForStmt& s, Scope& scope) {
    std::vector<Value> items = iterate(eval(*s.iterable, scope));
    budget_.charge(items.size());
    if (s.condition) {
      std::vector<Value> kept;
      for (Value& item : items) {
        Scope probe(&scope);
        assign(s.target, item, probe);
        if (!truthy(eval(*s.condition, probe))) continue;
        // Jinja filters through a generator of the unpacked targets, so
        // loop.previtem / nextitem then see tuples.
        kept.push_back(s.target.names.size() > 1 ? Value::list(iterate(item), true) : std::move(item));
      }
      items = std::move(kept);
    }
    // As Jinja compiles it, `else` runs unless some iteration reached the end
    // of the body: an empty loop, but also one left by break or continue
    // before any iteration finished.
    bool finished_an_iteration = false;
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      budget_.charge(1);
      Scope iteration(&scope);
      assign(s.target, items[static_cast<std::size_t>(i)], iteration);
      auto loop = std::make_shared<LoopData>();
      loop->index0 = i;
      loop->length = n;
      loop->previous = i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value::undefined("there is no previous item");
      loop->next = i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value::undefined("there is no next item");
      iteration.set("loop", Value::loop(std::move(loop)));
      const Flow flow = exec_list(s.body, iteration);
      if (flow == Flow::Break) break;
      finished_an_iteration = finished_an_iteration || flow == Flow::Normal;
    }
    if (finished_an_iteration) return Flow::Normal;
    Scope otherwise(&scope);
    return exec_list(s.otherwise, otherwise);
  }

  Flow exec_node(const SetStmt& s, Scope& scope) {
    Value v;
    if (s.value) {
      v = eval(*s.value, scope);
    } else {
      Scope inner(&scope);
      v = apply_filters(s.filters, Value::string(capture(s.body, inner)), scope);
    }
    assign(s.target, v, scope);
    return Flow::Normal;
  }

  Flow exec_node(const MacroStmt& s, Scope& scope) {
    auto fn = std::make_shared<CallableData>();
    fn->kind = CallableData::Kind::Macro;
    fn->name = s.name;
    fn->macro = &s;
    // Inside a block the macro keeps the names it can see there; the
    // top level is looked up when it runs.
    for (const Scope* at = &scope; at && at != root_; at = at->parent()) {
      for (const auto& var : at->vars()) {
        const bool shadowed =
            std::any_of(fn->closure.begin(), fn->closure.end(), [&](const auto& c) { return c.first == var.first; });
        if (!shadowed) fn->closure.push_back(var);
      }
    }
    scope.set(s.name, Value::callable(std::move(fn)));
    return Flow::Normal;
  }

  Flow exec_node(const FilterBlockStmt& s, Scope& scope) {
    Scope inner(&scope);
    const Value v = apply_filters(s.filters, Value::string(capture(s.body, inner)), scope);
    write(to_str(v));
    return Flow::Normal;
  }

  Flow exec_node(const BlockStmt& s, Scope& scope) {
    Scope inner(&scope);
    return exec_list(s.body, inner);
  }

  Flow exec_node(const BreakStmt&, Scope&) { return Flow::Break; }
  Flow exec_node(const ContinueStmt&, Scope&) { return Flow::Continue; }

  Value apply_filters(const std::vector<FilterCall>& filters, Value v, const Scope& scope) {
    for (const FilterCall& f : filters) {
      try {
        v = apply_filter(f.name, v, eval_args(f.args, scope), budget_);
      } catch (const Error& e) {
        throw located(f.where, e);
      }
    }
    return v;
  }

  void assign(const AssignTarget& target, const Value& v, Scope& scope) {
    if (!target.attribute.empty()) {
      const Value ns = lookup(target.names[0], scope);
      if (ns.kind() != Value::Kind::Namespace) throw Error("cannot assign attribute on non-namespace object");
      ns.as_namespace().set(target.attribute, v);
      return;
    }
    if (target.names.size() == 1) {
      scope.set(target.names[0], v);
      return;
    }
    // Any iterable unpacks, as in Python: a dict gives its keys, a string its characters.
    if (v.kind() != Value::Kind::List && v.kind() != Value::Kind::Dict && !v.is_string())
      throw Error("cannot unpack non-iterable " + type_name(v) + " object");
    const std::vector<Value> items = iterate(v);
    if (items.size() != target.names.size())
      throw Error("cannot unpack " + std::to_string(items.size()) + " values into " +
                  std::to_string(target.names.size()) + " names");
    for (std::size_t i = 0; i < items.size(); ++i) scope.set(target.names[i], items[i]);
  }

  // Expressions.

  Value eval(const Expr& e, const Scope& scope) {
    try {
      Deeper deeper(*this);
      budget_.charge(1);
      Value v = std::visit([&](const auto& node) { return eval_node(node, scope); }, e.node);
      // Building a string costs in proportion to its length (looking one up does not).
      const bool builds = std::holds_alternative<BinaryExpr>(e.node) || std::holds_alternative<FilterExpr>(e.node) ||
                          std::holds_alternative<CallExpr>(e.node);
      if (builds && v.is_string()) budget_.charge(v.as_string().size() / kBytesPerWorkUnit);
      return v;
    } catch (const Error& err) {
      throw located(e.where, err);
    }
  }

  CallArgs eval_args(const Arguments& args, const Scope& scope) {
    CallArgs out;
    for (const ExprPtr& a : args.positional) out.positional.push_back(eval(*a, scope));
    for (const auto& [name, a] : args.named) out.named.emplace_back(name, eval(*a, scope));
    return out;
  }

  Value eval_node(const LiteralExpr& e, const Scope&) { return e.value; }
  Value eval_node(const NameExpr& e, const Scope& scope) { return lookup(e.name, scope); }

  Value eval_node(const ListExpr& e, const Scope& scope) {
    std::vector<Value> items;
    items.reserve(e.items.size());
    for (const ExprPtr& item : e.items) items.push_back(eval(*item, scope));
    return Value::list(std::move(items), e.is_tuple);
  }

  Value eval_node(const DictExpr& e, const Scope& scope) {
    std::vector<std::pair<std::string, Value>> entries;
    for (const auto& [k, v] : e.entries) {
      const Value key = eval(*k, scope);
      if (!key.is_string()) throw Unsupported("dict keys other than strings are not supported");
      entries.emplace_back(key.as_string(), eval(*v, scope));
    }
    return Value::dict(std::move(entries));
  }

  Value eval_node(const UnaryExpr& e, const Scope& scope) {
    const Value v = eval(*e.operand, scope);
    switch (e.op) {
      case UnaryOp::Not:
        return Value::boolean(!truthy(v));
      case UnaryOp::Neg:
        return negate(v);
      case UnaryOp::Pos:
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number()) throw Error("bad operand type for unary +: '" + type_name(v) + "'");
        return v.is_int_like() ? Value::integer(v.as_int()) : v;
    }
    return v;
  }

  Value eval_node(const BinaryExpr& e, const Scope& scope) {
    Value left = eval(*e.left, scope);
    if (e.op == BinaryOp::And) return truthy(left) ? eval(*e.right, scope) : left;
    if (e.op == BinaryOp::Or) return truthy(left) ? left : eval(*e.right, scope);
    return binary_op(e.op, left, eval(*e.right, scope), budget_);
  }

  Value eval_node(const CompareExpr& e, const Scope& scope) {
    Value left = eval(*e.first, scope);
    for (const auto& [op, expr] : e.rest) {
      Value right = eval(*expr, scope);
      bool ok = false;
      switch (op) {
        case CompareOp::Eq:
          ok = equals(left, right);
          break;
        case CompareOp::Ne:
          ok = !equals(left, right);
          break;
        case CompareOp::Lt:
          ok = compare(left, right) < 0;
          break;
        case CompareOp::Le:
          ok = compare(left, right) <= 0;
          break;
        case CompareOp::Gt:
          ok = compare(left, right) > 0;
          break;
        case CompareOp::Ge:
          ok = compare(left, right) >= 0;
          break;
        case CompareOp::In:
          ok = contains(right, left);
          break;
        case CompareOp::NotIn:
          ok = !contains(right, left);
          break;
      }
      if (!ok) return Value::boolean(false);
      left = std::move(right);
    }
    return Value::boolean(true);
  }

  Value eval_node(const AttributeExpr& e, const Scope& scope) { return get_attribute(eval(*e.object, scope), e.name); }

  Value eval_node(const ItemExpr& e, const Scope& scope) {
    const Value object = eval(*e.object, scope);
    return get_item(object, eval(*e.index, scope));
  }

  Value eval_node(const SliceExpr& e, const Scope& scope) {
    const Value object = eval(*e.object, scope);
    Value start, stop, step;
    if (e.start) start = eval(*e.start, scope);
    if (e.stop) stop = eval(*e.stop, scope);
    if (e.step) step = eval(*e.step, scope);
    return slice(object, e.start ? &start : nullptr, e.stop ? &stop : nullptr, e.step ? &step : nullptr);
  }

  Value eval_node(const CallExpr& e, const Scope& scope) {
    const Value callee = eval(*e.callee, scope);
    const CallArgs args = eval_args(e.args, scope);
    if (callee.is_undefined()) fail_undefined(callee);
    if (callee.kind() != Value::Kind::Callable) throw Error(quote_name(type_name(callee)) + " object is not callable");
    const CallableData& fn = callee.as_callable();
    switch (fn.kind) {
      case CallableData::Kind::Builtin:
        return call_global(fn.name, args, budget_);
      case CallableData::Kind::Method:
        return call_method(fn.receiver, fn.name, args, budget_);
      case CallableData::Kind::Macro:
        return call_macro(fn, args);
    }
    return Value();
  }

  Value call_macro(const CallableData& fn, const CallArgs& args) {
    const MacroStmt& m = *fn.macro;
    if (args.positional.size() > m.params.size())
      throw Error("macro '" + m.name + "' takes not more than " + std::to_string(m.params.size()) + " argument(s)");
    for (const auto& [k, v] : args.named) {
      const auto at = std::find(m.params.begin(), m.params.end(), k);
      if (at == m.params.end()) throw Error("macro '" + m.name + "' takes no keyword argument '" + k + "'");
      if (static_cast<std::size_t>(at - m.params.begin()) < args.positional.size())
        throw Error("macro '" + m.name + "' got multiple values for argument '" + k + "'");
    }
    Scope frame(root_);
    for (const auto& [k, v] : fn.closure) frame.set(k, v);
    for (std::size_t i = 0; i < m.params.size(); ++i) {
      const Value* given = i < args.positional.size() ? &args.positional[i] : args.find_named(m.params[i]);
      if (given) {
        frame.set(m.params[i], *given);
      } else if (m.defaults[i]) {
        frame.set(m.params[i], eval(*m.defaults[i], frame));
      } else {
        frame.set(m.params[i], Value::undefined(quote_name(m.params[i]) + " is undefined"));
      }
    }
    return Value::string(capture(m.body, frame));
  }

  Value eval_node(const FilterExpr& e, const Scope& scope) {
    const Value operand = eval(*e.operand, scope);
    return apply_filter(e.name, operand, eval_args(e.args, scope), budget_);
  }

  Value eval_node(const TestExpr& e, const Scope& scope) {
    const Value operand = eval(*e.operand, scope);
    return Value::boolean(apply_test(e.name, operand, eval_args(e.args, scope)) != e.negated);
  }

  Value eval_node(const ConditionalExpr& e, const Scope& scope) {
    if (truthy(eval(*e.condition, scope))) return eval(*e.then, scope);
    if (e.otherwise) return eval(*e.otherwise, scope);
    return Value::undefined("the inline if-expression was false and has no else branch");
  }

  const Variables& variables_;
  Budget budget_;
  Scope* root_ = nullptr;
  std::string* out_ = nullptr;
  int depth_ = 0;
};

}  // namespace

std::string render(const StmtList& body, const Variables& variables) { return Renderer(variables).run(body); }

}  // namespace lamina::model::jinja
