#include "runtime/launch/launch_observer.h"

namespace torch_tile {
namespace {

thread_local LaunchObserver* t_observer = nullptr;

}  // namespace

LaunchObserver* launch_observer() { return t_observer; }

ScopedLaunchObserver::ScopedLaunchObserver(LaunchObserver* observer) : previous_(t_observer) {
  t_observer = observer;
}

ScopedLaunchObserver::~ScopedLaunchObserver() { t_observer = previous_; }

}  // namespace torch_tile
