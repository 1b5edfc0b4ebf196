#include "runtime/counters.h"

namespace torch_tile {

Counters& counters() {
  static Counters c;
  return c;
}

}  // namespace torch_tile
