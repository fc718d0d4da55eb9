#include "server/request_registry.h"

#include <vector>

namespace strata::server {

bool RequestRegistry::add(const std::shared_ptr<ResumableRequest>& rr, std::chrono::steady_clock::duration retain,
                          std::shared_ptr<ResumableRequest>* existing) {
  std::lock_guard lk(mu_);
  const auto old = std::chrono::steady_clock::now() - retain;
  for (auto it = by_id_.begin(); it != by_id_.end();) {
    if (it->second->done() && it->second->finished_at < old) {
      keys_.erase(it->second->idempotency_key);
      it = by_id_.erase(it);
    } else {
      ++it;
    }
  }
  const std::string& key = rr->idempotency_key;
  if (!key.empty()) {
    if (auto it = keys_.find(key); it != keys_.end()) {
      if (existing) *existing = by_id_.at(it->second);
      return false;
    }
    keys_[key] = rr->meta.id;
  }
  by_id_[rr->meta.id] = rr;
  return true;
}

std::shared_ptr<ResumableRequest> RequestRegistry::by_id(const std::string& id) {
  std::lock_guard lk(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

std::shared_ptr<ResumableRequest> RequestRegistry::by_key(const std::string& key) {
  std::lock_guard lk(mu_);
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : by_id_.at(it->second);
}

std::shared_ptr<ResumableRequest> RequestRegistry::by_engine_id(uint64_t engine_id, size_t* choice) {
  std::vector<std::shared_ptr<ResumableRequest>> all;
  {
    std::lock_guard lk(mu_);  // never held with a request's own lock
    for (const auto& [id, rr] : by_id_) all.push_back(rr);
  }
  for (const auto& rr : all) {
    std::lock_guard lk(rr->mu);
    for (size_t c = 0; c < rr->engine_ids.size(); ++c)
      if (rr->engine_ids[c] == engine_id &&
          (c >= rr->events.size() || rr->events[c].empty() || rr->events[c].back().kind != engine::EventKind::finished)) {
        *choice = c;
        return rr;
      }
  }
  return nullptr;
}

void RequestRegistry::remove(const ResumableRequest& rr) {
  std::lock_guard lk(mu_);
  by_id_.erase(rr.meta.id);
  keys_.erase(rr.idempotency_key);
}

}  // namespace strata::server
