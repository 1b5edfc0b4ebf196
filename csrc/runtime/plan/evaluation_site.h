// An expression of a plan evaluated for one of its uses (a grid dimension, a
// kernel argument, an allocation's size...): an error in it (division by zero,
// overflow, a dimension the tensor lacks) names the op and that use, not only
// the expression.
#pragma once

#include <string>

#include "runtime/error.h"
#include "runtime/plan/expr.h"

namespace torch_tile {

// `where()` describes the use, e.g. "grid dimension 0 of kernel k (launched at body.py:12)"; it is called only
// on an error, so the steady state builds no text.
template <class Where>
int64_t evaluate_at(const Expr& e, const EvalContext& ctx, const char* op, Where where) {
  try {
    return e.evaluate(ctx);
  } catch (const Error& error) {
    fail(error.kind(), std::string(op) + ": " + where() + ": " + error.what());
  }
}

}  // namespace torch_tile
