// The journaled requests a client can still reach (strata serve --journal): by response id and
// by Idempotency-Key. Finished requests leave after the journal's retention, as the journal
// drops them.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server/resumable_request.h"

namespace strata::server {

class RequestRegistry {
 public:
  // Drops the requests that finished longer than `retain` ago, then registers `rr` under its
  // response id and its Idempotency-Key (when it has one). Returns false, registering nothing,
  // when the key is already another request's; that request goes to `*existing`.
  bool add(const std::shared_ptr<ResumableRequest>& rr, std::chrono::steady_clock::duration retain,
           std::shared_ptr<ResumableRequest>* existing = nullptr);
  // Null when unknown.
  std::shared_ptr<ResumableRequest> by_id(const std::string& id);
  std::shared_ptr<ResumableRequest> by_key(const std::string& key);
  // The request whose unfinished choice `*choice` is engine request `engine_id`; null when none is.
  std::shared_ptr<ResumableRequest> by_engine_id(uint64_t engine_id, size_t* choice);
  // Forgets a request that never ran (it could not be journaled or submitted).
  void remove(const ResumableRequest& rr);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<ResumableRequest>> by_id_;
  std::unordered_map<std::string, std::string> keys_;  // Idempotency-Key -> response id
};

}  // namespace strata::server
