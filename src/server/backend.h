// What the HTTP layer needs from the engine: the engine::Engine contract as an interface, so
// the routes are tested against a scripted double and served by the real engine (cmd_serve).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/engine.h"

namespace strata::server {

class Backend {
 public:
  virtual ~Backend() = default;
  // As engine::Engine::submit: throws strata::Error for invalid input, engine::QueueFull.
  virtual uint64_t submit(engine::Request r, engine::EventCallback on_event) = 0;
  virtual void cancel(uint64_t request_id) = 0;
  // As engine::Engine::replay: a request's events from the tokens it generated, computing nothing.
  virtual std::vector<engine::Event> replay(engine::Request r) = 0;
  virtual engine::EngineMetrics metrics() = 0;
  // As engine::Engine::import_snapshot. A backend without an engine (a test double) has none.
  virtual uint64_t import_snapshot(engine::RequestSnapshot snap, const std::string& source,
                                   engine::EventCallback on_event) {
    (void)snap, (void)on_event;
    throw Error(source + ": this backend restores no snapshots");
  }
  // As engine::Engine::requests. A backend without an engine (a test double) has none.
  virtual std::vector<engine::RequestInfo> requests() { return {}; }
};

}  // namespace strata::server
