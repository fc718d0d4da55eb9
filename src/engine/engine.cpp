// The engine thread: each step it applies cancellations, admits waiting requests, plans the
// step (scheduler.h), preempts what does not fit the cache budget, runs every scheduled chunk
// and samples the requests whose chunk reached their last token. Requests join and leave at
// every step. Only the engine thread touches running requests; submit/cancel/metrics/shutdown
// talk to it through `mu`.
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_set>

#include "cache/cache_map.h"
#include "cache/cache_spec.h"
#include "cache/pool.h"
#include "core/error.h"
#include "engine/prefix_cache.h"
#include "engine/request_state.h"
#include "engine/scheduler.h"
#include "engine/speculative.h"
#include "grammar/grammar_cache.h"
#include "kernels/parallel.h"
#include "models/model.h"
#include "text/tokenizer.h"

namespace strata::engine {

using Req = std::unique_ptr<RequestState>;

static std::shared_ptr<const grammar::CompiledGrammar> compiled(grammar::GrammarCache& c, const StructuredOutput& so) {
  return so.tool_calls.empty() ? c.get(so.json_schema) : c.get_tool_calls(so.tool_calls);
}

static RequestInfo info_of(const RequestState& r, bool running, const cache::CachePool& pool) {
  RequestInfo i;
  i.id = r.id;
  i.running = running;
  i.prompt_tokens = r.prompt_tokens;
  i.generated_tokens = r.generated();
  i.cached_prompt_tokens = r.cached_prompt_tokens;
  i.max_tokens = r.sampler.params().max_tokens.value_or(0);
  i.context_tokens = r.context();
  if (r.in_pool)
    i.cache_bytes = int64_t(r.pool.blocks.size()) * pool.block_stride() + (r.pool.slot >= 0 ? pool.slot_stride() : 0) +
                    (r.pool.draft >= 0 ? pool.draft_stride() : 0);
  i.age_seconds = std::chrono::duration<double>(RequestState::clock::now() - r.submitted).count();
  i.structured = r.sampler.params().structured.has_value();
  return i;
}

struct Engine::Impl {
  std::shared_ptr<const models::Model> model;
  std::shared_ptr<const Tokenizer> tok;
  EngineOptions opt;
  models::CacheOptions cache_options;  // every sequence's, the pool's layout's
  cache::CacheLayout layout;
  // Every cache a sequence holds (the MTP block's too, pooled or not): what an export writes.
  cache::CacheLayout export_layout;
  int64_t max_context = 0, pool_budget = 0;
  std::vector<int32_t> eos;
  std::optional<grammar::GrammarCache> grammars;  // structured output's compiled schemas

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Req> waiting;                 // by arrival; preempted requests go back to the front
  std::unordered_set<uint64_t> live_ids;   // waiting or running (for cancel and id clashes)
  std::set<uint64_t> cancels;
  struct ExportJob {
    uint64_t id;
    std::string path;
    std::promise<void> done;
  };
  std::vector<std::shared_ptr<ExportJob>> exports;
  bool stopped = false;                    // the engine thread has exited
  bool stopping = false, drain = false;
  SnapshotPath shutdown_snapshots;         // set with stopping (shutdown_with_snapshots)
  uint64_t next_id = 1;
  int64_t next_arrival = 0;
  EngineMetrics m;                         // counters and samples, under mu
  std::vector<RequestInfo> running_info;   // the running requests after the last step, under mu
  std::chrono::steady_clock::time_point running_info_at;
  std::mutex shutdown_mu;
  std::thread thread;

  std::vector<Req> running;  // engine thread only, in arrival order
  std::optional<MtpDrafter> drafter;  // speculative decoding on
  SamplingScratch scratch;

  std::unique_ptr<cache::CachePool> pool;  // engine thread only (its figures are published under mu)
  std::optional<PrefixCache> prefix;       // engine thread only; its checkpoints live in the pool (declared after it)
  // The forward pass's working memory, carved from the pool's workspace (declared after the
  // pool): every request's forward pass uses it, one at a time. Null when the model needs none.
  std::unique_ptr<models::Workspace> workspace;
  std::unique_ptr<models::Sequence> new_state() const {
    auto st = model->new_sequence(cache_options);
    st->use_workspace(workspace.get());
    return st;
  }
  // What a request at this context costs the pool: its slot, draft unit and blocks with their
  // alignment.
  int64_t bytes_for(int64_t context) const {
    return pool->slot_stride() + pool->draft_stride() + layout.blocks_for(context) * pool->block_stride();
  }
  void free_cache(RequestState& r) {
    r.state.reset();
    r.in_pool = false;
    pool->release(r.pool);
  }
  // Reserves r's slot and blocks for `context` tokens, evicting prefix checkpoints while the
  // pool lacks the room; moves r's state into the pool the first time. False: no room.
  bool reserve(RequestState& r, int64_t context);
  void run();
  bool step();
  void finish(Req& r, Event ev, bool was_running);
  void publish_pool();
  void do_exports();
  void start(RequestState& r);
  void run_batched(std::vector<int64_t>& left, std::vector<std::vector<float>>& logits);
  void checkpoint(RequestState& r);
  void plan_drafts(const StepPlan& plan, std::vector<int64_t>& left);
  struct StepTimes {
    int64_t generated = 0;
    std::vector<double> ttft, itl;
  };
  // Samples a request's row of logits; false when the request has finished.
  bool sample_row(Req& r, std::vector<float>& row, StepTimes& t);
  // A verified request's kept tokens, for the MTP to catch up on (finish_verified).
  struct Verified {
    RequestState* r;
    std::vector<int64_t> feed;
    int64_t drafted, kept;
  };
  void verify_drafts(Req& r, std::vector<float>& all, StepTimes& t, std::vector<Verified>& out);
  void finish_verified(std::vector<Verified>& verified);
};

namespace {

void deliver(RequestState& r, const Event& ev) {
  try {
    if (r.on_event) r.on_event(ev);
  } catch (...) {  // a caller's callback must not take the engine down
  }
}

void check_prompt(const std::vector<int32_t>& prompt, int32_t vocab) {
  if (prompt.empty()) throw Error("the prompt is empty");
  for (int32_t id : prompt)
    if (id < 0 || id >= vocab)
      throw Error("prompt token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) +
                  ")");
}

}  // namespace

Engine::Engine(std::shared_ptr<const models::Model> model, std::shared_ptr<const Tokenizer> tokenizer,
               EngineOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error("engine: no model");
  if (!tokenizer) throw Error("engine: no tokenizer");
  auto& I = *impl_;
  I.model = std::move(model);
  I.tok = std::move(tokenizer);
  I.grammars.emplace(I.tok);
  I.opt = options;
  const auto& mc = I.model->model_config();
  const auto& facts = I.model->facts();
  I.cache_options.fp4_index_keys = options.index_keys_fp4;
  I.cache_options.include_mtp = options.spec_tokens > 0;  // the drafter's MTP state lives in the pool too
  I.cache_options.draft_tokens = std::max(0, options.spec_tokens);
  I.layout = mc.cache_layout(I.cache_options);
  {
    models::CacheOptions all = I.cache_options;
    all.include_mtp = true;
    all.draft_tokens = 0;
    I.export_layout = mc.cache_layout(all);
  }
  I.max_context = options.max_context > 0 ? std::min(options.max_context, I.model->max_positions())
                                          : I.model->max_positions();
  if (I.opt.max_running < 1) throw Error("engine: max_running must be at least 1");
  if (I.opt.max_batch_tokens < 1) throw Error("engine: max_batch_tokens must be at least 1");
  I.pool_budget = options.pool_bytes > 0
                      ? options.pool_bytes
                      : I.opt.max_running * cache::CachePool::sequence_bytes_bound(I.layout, I.max_context);
  if (options.threads > 0) kernels::set_num_threads(options.threads);  // before the scratch's parts
  {
    // The forward pass's working memory: one part per thread, sized for the longest context
    // (bounded, allocated once, counted by the pool as its workspace).
    const int64_t parts = kernels::num_threads();
    const int64_t ws = mc.workspace_bytes(I.max_context, parts);
    I.pool = std::make_unique<cache::CachePool>(I.layout, I.pool_budget, false, ws, I.opt.max_running);
    if (ws > 0) I.workspace = I.model->workspace(I.pool->workspace(), I.pool->workspace_bytes(), I.max_context, parts);
  }
  for (int64_t e : facts.eos_token_ids) I.eos.push_back(int32_t(e));
  if (I.tok->eos_id() >= 0 && std::find(I.eos.begin(), I.eos.end(), I.tok->eos_id()) == I.eos.end())
    I.eos.push_back(I.tok->eos_id());
  if (options.prefix_cache) I.prefix.emplace(*I.pool);
  if (options.spec_tokens < 0) throw Error("engine: spec_tokens must be >= 0");
  if (options.spec_tokens > 0) {
    if (I.model->n_mtp() == 0) throw Error("engine: speculative decoding needs an MTP block; the checkpoint has none");
    I.drafter.emplace(*I.model);
  }
  I.m.pool_bytes_total = I.pool_budget;
  I.m.pool_workspace_bytes = I.pool->workspace_bytes();
  I.publish_pool();
  I.thread = std::thread([this] { impl_->run(); });
}

Engine::~Engine() { shutdown(false); }

const models::Model& Engine::model() const { return *impl_->model; }
const Tokenizer& Engine::tokenizer() const { return *impl_->tok; }
int64_t Engine::max_context() const { return impl_->max_context; }
const cache::CacheLayout& Engine::cache_layout() const { return impl_->layout; }

std::vector<RequestInfo> Engine::requests() const {
  auto& I = *impl_;
  std::lock_guard lk(I.mu);
  std::vector<RequestInfo> out = I.running_info;
  const double since = std::chrono::duration<double>(RequestState::clock::now() - I.running_info_at).count();
  for (auto& i : out) i.age_seconds += since;
  for (const auto& r : I.waiting) out.push_back(info_of(*r, false, *I.pool));
  return out;
}

std::vector<Event> Engine::replay(Request r) const {
  auto& I = *impl_;
  const int64_t n = int64_t(r.prompt.size());
  const int32_t vocab = int32_t(I.model->vocab_size());
  check_prompt(r.prompt, vocab);
  r.sampling.validate();
  if (!r.sampling.max_tokens) r.sampling.max_tokens = I.max_context - n;  // as submit()
  // A grammar only constrains the draw: which token ends the request does not depend on it.
  r.sampling.structured.reset();
  RequestState st(r.id, 0, std::move(r.prompt), r.sampling, vocab, I.eos, *I.tok, {});
  return st.replay_to_end(r.accepted);
}

uint64_t Engine::submit(Request r, EventCallback on_event) {
  auto& I = *impl_;
  const int64_t n = int64_t(r.prompt.size());
  const int32_t vocab = int32_t(I.model->vocab_size());
  check_prompt(r.prompt, vocab);
  r.sampling.validate();
  // Compiled here, on the submitting thread (a cache hit for a schema seen before).
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  if (r.sampling.structured) grammar = compiled(*I.grammars, *r.sampling.structured);
  if (n >= I.max_context)
    throw Error("prompt of " + std::to_string(n) + " tokens leaves no room in the context of " +
                std::to_string(I.max_context) + " tokens");
  for (int32_t id : r.accepted)
    if (id < 0 || id >= vocab)
      throw Error("accepted token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(vocab) + ")");
  if (!r.sampling.max_tokens) r.sampling.max_tokens = I.max_context - n;
  if (n + *r.sampling.max_tokens > I.max_context)
    throw Error("prompt of " + std::to_string(n) + " tokens + max_tokens " + std::to_string(*r.sampling.max_tokens) +
                " exceeds the context of " + std::to_string(I.max_context) + " tokens");
  const int64_t need = I.bytes_for(n + *r.sampling.max_tokens);
  if (need > I.pool_budget)
    throw Error("request needs " + std::to_string(need) + " bytes of cache at its longest, more than the pool's " +
                std::to_string(I.pool_budget));

  std::lock_guard lk(I.mu);
  if (I.stopping) throw Error("the engine is shutting down");
  if (I.waiting.size() >= I.opt.max_queue)
    throw QueueFull("the queue is full (" + std::to_string(I.opt.max_queue) + " waiting requests)");
  uint64_t id = r.id;
  if (id == 0) {
    while (I.live_ids.count(I.next_id)) ++I.next_id;
    id = I.next_id++;
  } else if (I.live_ids.count(id)) {
    throw Error("request id " + std::to_string(id) + " is already in use");
  }
  // The Sampler validates stop/EOS ids against the vocabulary (strata::Error) before queueing.
  auto req = std::make_unique<RequestState>(id, I.next_arrival, std::move(r.prompt), r.sampling, vocab, I.eos, *I.tok,
                                            std::move(on_event));
  if (grammar) req->sampler.attach_grammar(std::move(grammar));
  // Before it is queued: a bad resume is the caller's error, and its replayed events come
  // before any the engine thread delivers.
  for (const Event& ev : req->replay(r.accepted))
    if (r.report_accepted) deliver(*req, ev);
  if (I.drafter) req->draft_length.emplace(I.opt.spec_tokens);
  req->forced_drafts = std::move(r.forced_drafts);
  ++I.next_arrival;
  I.live_ids.insert(id);
  I.waiting.push_back(std::move(req));
  I.m.prompt_tokens += n;
  I.m.waiting = int64_t(I.waiting.size());
  I.cv.notify_all();
  return id;
}

void Engine::cancel(uint64_t request_id) {
  auto& I = *impl_;
  std::lock_guard lk(I.mu);
  if (!I.live_ids.count(request_id)) return;
  I.cancels.insert(request_id);
  I.cv.notify_all();
}

EngineMetrics Engine::metrics() {
  auto& I = *impl_;
  std::lock_guard lk(I.mu);
  return I.m;
}

void Engine::export_request(uint64_t request_id, const std::string& path) {
  auto& I = *impl_;
  auto job = std::make_shared<Impl::ExportJob>();
  job->id = request_id;
  job->path = path;
  auto done = job->done.get_future();
  {
    std::lock_guard lk(I.mu);
    if (I.stopped) throw Error("the engine has stopped");
    if (!I.live_ids.count(request_id)) throw Error("no request " + std::to_string(request_id) + " to export");
    I.exports.push_back(job);
    I.cv.notify_all();
  }
  done.get();  // rethrows the engine thread's error
}

uint64_t Engine::import_request(const std::string& path, EventCallback on_event) {
  return import_snapshot(read_snapshot(path), path, std::move(on_event));
}

uint64_t Engine::import_snapshot(RequestSnapshot snap, const std::string& path, EventCallback on_event) {
  auto& I = *impl_;
  const int32_t vocab = int32_t(I.model->vocab_size());
  for (int32_t t : snap.tokens)
    if (t < 0 || t >= vocab) throw Error(path + ": token id " + std::to_string(t) + " is outside the vocabulary");
  if (snap.model_type != I.model->facts().model_type)
    throw Error(path + ": the request ran on a " + snap.model_type + " model, this one is " +
                I.model->facts().model_type);
  std::unique_ptr<models::Sequence> state;
  if (snap.has_state) {
    state = I.new_state();
    const int64_t n_mtp = int64_t(state->mtp_pos.size());
    if (int64_t(snap.mtp_pos.size()) != n_mtp) throw Error(path + ": the snapshot's state does not fit this model");
    for (int64_t p : snap.mtp_pos)
      if (p < 0 || p > snap.pos) throw Error(path + ": the snapshot's state does not fit this model");
    state->pos = snap.pos;
    state->mtp_pos = snap.mtp_pos;
    state->mtp_hidden = snap.mtp_hidden;
    try {
      auto map = state->cache_map(I.export_layout);
      cache::import_caches(snap.caches, map, I.export_layout);
    } catch (const Error& e) {
      throw Error(path + ": the snapshot's state does not fit this model: " + e.what());
    }
  }
  if (int64_t(snap.tokens.size()) >= I.max_context) throw Error(path + ": the request is at the end of the context");
  std::lock_guard lk(I.mu);
  if (I.stopping) throw Error("the engine is shutting down");
  if (I.waiting.size() >= I.opt.max_queue)
    throw QueueFull("the queue is full (" + std::to_string(I.opt.max_queue) + " waiting requests)");
  uint64_t id = snap.id;
  if (id == 0 || I.live_ids.count(id)) {
    while (I.live_ids.count(I.next_id)) ++I.next_id;
    id = I.next_id++;
  }
  auto req = std::make_unique<RequestState>(id, I.next_arrival++, std::move(snap), std::move(state), *I.tok,
                                            std::move(on_event));
  if (const auto& so = req->sampler.params().structured) req->sampler.attach_grammar(compiled(*I.grammars, *so));
  if (I.drafter) req->draft_length.emplace(I.opt.spec_tokens);
  if (req->sampler.vocab_size() != vocab) throw Error(path + ": the snapshot's vocabulary does not fit this model");
  I.live_ids.insert(id);
  I.waiting.push_back(std::move(req));
  I.m.waiting = int64_t(I.waiting.size());
  I.cv.notify_all();
  return id;
}

void Engine::shutdown(bool drain) {
  auto& I = *impl_;
  std::lock_guard guard(I.shutdown_mu);
  {
    std::lock_guard lk(I.mu);
    if (!I.stopping) I.drain = drain;
    I.stopping = true;
    I.cv.notify_all();
  }
  if (I.thread.joinable()) I.thread.join();
}

void Engine::shutdown_with_snapshots(SnapshotPath path) {
  {
    std::lock_guard lk(impl_->mu);
    if (!impl_->stopping) impl_->shutdown_snapshots = std::move(path);
  }
  shutdown(/*drain=*/false);
}

// Ends a request: its cache is freed and the counters (outcome, running, pool bytes) are
// updated before its last event is delivered, so a caller that sees the event sees them too.
void Engine::Impl::finish(Req& r, Event ev, bool was_running) {
  {
    std::lock_guard lk(mu);
    live_ids.erase(r->id);
    cancels.erase(r->id);
    if (ev.cancelled) ++m.cancelled;
    else if (!ev.error.empty()) ++m.errored;
    else ++m.finished;
    if (was_running) --m.running;
    free_cache(*r);
    m.pool_bytes_by_kind = pool->bytes_by_kind();
  }
  deliver(*r, ev);
  r.reset();
}

// Cache bytes by kind held in the pool: the ledger's block-rounded figures.
void Engine::Impl::publish_pool() {
  std::vector<RequestInfo> infos;
  for (const auto& r : running)
    if (r) infos.push_back(info_of(*r, true, *pool));
  auto by_kind = pool->bytes_by_kind();
  const int64_t ckpts = prefix ? int64_t(prefix->size()) : 0, ckpt_blocks = prefix ? prefix->blocks_referenced() : 0;
  std::lock_guard lk(mu);
  m.pool_bytes_by_kind = std::move(by_kind);
  m.prefix_checkpoints = ckpts;
  m.prefix_blocks = ckpt_blocks;
  m.running = int64_t(running.size());
  m.waiting = int64_t(waiting.size());
  running_info = std::move(infos);
  running_info_at = RequestState::clock::now();
}

// A request (new, or preempted earlier) gets its state: from the longest prefix checkpoint
// of its tokens (leaving at least the last token to compute, whose logits are sampled), or
// empty.
void Engine::Impl::start(RequestState& r) {
  r.state = new_state();
  const bool first = r.computed_high == 0;
  int64_t hit = 0;
  if (prefix) hit = prefix->restore(r.tokens, int64_t(r.tokens.size()) - 1, *r.state, r.pool);
  r.in_pool = hit > 0;
  if (first) r.cached_prompt_tokens = std::min(hit, r.prompt_tokens);
  r.computed_high = std::max(r.computed_high, hit);
  std::lock_guard lk(mu);
  if (first) m.prefix_lookup_tokens += r.prompt_tokens;
  m.prefix_hit_tokens += hit;
}

// Runs left[i] tokens of every running request i in one forward_batch per round: each weight
// matrix is read once per round for all requests. With prefix caching, chunks are split at
// block boundaries (a round ends a piece there) so the state at each boundary can be
// checkpointed; splitting never changes results. Requests whose chunk reaches their last
// token get its logits. A failing round ends its requests with the error.
void Engine::Impl::run_batched(std::vector<int64_t>& left, std::vector<std::vector<float>>& logits) {
  const int64_t bt = layout.block_tokens;
  std::vector<std::vector<int64_t>> ids(running.size());
  while (true) {
    std::vector<models::Model::BatchItem> items;
    std::vector<size_t> who;
    for (size_t i = 0; i < running.size(); ++i) {
      if (!running[i] || left[i] == 0) continue;
      RequestState& r = *running[i];
      const int64_t c0 = r.context();
      const int64_t k = prefix ? std::min(left[i], (c0 / bt + 1) * bt - c0) : left[i];
      models::Model::BatchItem it;
      it.state = &*r.state;
      if (!r.spec_feed.empty()) {  // [pending, drafts]: every row's logits, writes recorded
        ids[i] = r.spec_feed;
        it.all_logits = true;
        it.undo = &r.undo;
      } else {
        ids[i].assign(r.tokens.begin() + c0, r.tokens.begin() + c0 + k);
        it.logits = k == left[i] && c0 + k == int64_t(r.tokens.size());
      }
      it.ids = ids[i].data();
      it.n = int64_t(ids[i].size());
      if (drafter) it.hidden = &r.hidden;
      items.push_back(std::move(it));
      who.push_back(i);
    }
    if (items.empty()) return;
    try {
      model->forward_batch(items);
    } catch (const std::exception& e) {
      for (size_t i : who) finish(running[i], running[i]->end_event(false, e.what()), true), left[i] = 0;
      continue;
    }
    std::vector<MtpDrafter::SyncJob> syncs;
    std::vector<RequestState*> done;
    for (size_t b = 0; b < who.size(); ++b) {
      const size_t i = who[b];
      RequestState& r = *running[i];
      left[i] -= items[b].n;
      if (items[b].logits || items[b].all_logits) logits[i] = std::move(items[b].out);
      if (!r.spec_feed.empty()) {  // verified, rolled back and checkpointed in verify_drafts
        left[i] = 0;
        continue;
      }
      if (drafter) syncs.push_back({&*r.state, items[b].ids, items[b].n, r.hidden.data()});
      done.push_back(&r);
    }
    if (!syncs.empty()) drafter->sync_batch(syncs);  // the MTP catches up: one pass for all
    for (RequestState* r : done) checkpoint(*r);
  }
}

// At a block boundary, the request's state becomes a prefix checkpoint: its blocks shared, its
// fixed state copied into a slot (evicting older checkpoints only if that slot needs room).
void Engine::Impl::checkpoint(RequestState& r) {
  if (!prefix || !r.in_pool || r.context() % layout.block_tokens != 0) return;
  prefix->insert(r.tokens, *r.state, r.pool);
}

bool Engine::Impl::reserve(RequestState& r, int64_t context) {
  while (!pool->reserve(r.pool, context))
    if (!prefix || !prefix->evict_one()) return false;
  if (!r.in_pool) {
    auto map = r.state->cache_map(layout);
    cache::bind_to_pool(map, *pool, r.pool);
    r.in_pool = true;
  }
  return true;
}

// Every decoding request drafts with the MTP block: up to its adaptive draft length, within
// the step's spare token budget, max_tokens and the context, never across a 128-token block
// boundary when prefix caching is on (the boundary's checkpoint needs the state exactly
// there), and only if the pool can hold the drafted tokens too.
void Engine::Impl::plan_drafts(const StepPlan& plan, std::vector<int64_t>& left) {
  if (!drafter) return;
  int64_t spare = opt.max_batch_tokens, decoders = 0;
  for (size_t i = 0; i < running.size(); ++i) {
    if (!running[i]) continue;
    spare -= plan.chunk[i];
    const RequestState& r = *running[i];
    decoders += plan.chunk[i] == 1 && r.pending() == 1 && r.generated() > 0;
  }
  // Each drafted token costs one more row per decoding request: more so with a fuller batch.
  const double load = double(std::max<int64_t>(0, decoders - 1)) / 4.0;
  // Each request's draft length and pool room first, then all drafts in one MTP pass per
  // draft position (MtpDrafter::draft_batch: the head and each expert read once for all).
  std::vector<MtpDrafter::DraftJob> jobs;
  std::vector<size_t> who;
  for (size_t i = 0; i < running.size() && spare > 0; ++i) {
    if (!running[i] || plan.chunk[i] != 1) continue;
    RequestState& r = *running[i];
    if (r.pending() != 1 || r.generated() == 0) continue;
    const int64_t c0 = r.context();
    int64_t k = opt.spec_adaptive ? r.draft_length->next(load) : opt.spec_tokens;
    k = std::min({k, spare, *r.sampler.params().max_tokens - r.generated() - 1, max_context - c0 - 1});
    if (prefix) k = std::min(k, (c0 / layout.block_tokens + 1) * layout.block_tokens - c0 - 1);
    // The pool first: no drafting for tokens it could not hold.
    if (k <= 0 || !pool->reserve(r.pool, c0 + 1 + k)) continue;  // drafts never evict prefix checkpoints
    jobs.push_back({&*r.state, r.tokens.back(), int(k), {}, &r.sampler.params().logit_bias});
    who.push_back(i);
    spare -= k;
  }
  if (jobs.empty()) return;
  try {
    drafter->draft_batch(jobs, tok->vocab_size());
  } catch (const std::exception&) {  // no drafts this step (each MTP state is rolled back)
    for (auto& job : jobs) job.drafts.clear();
  }
  for (size_t b = 0; b < jobs.size(); ++b) {
    RequestState& r = *running[who[b]];
    auto& d = jobs[b].drafts;
    pool->shrink(r.pool, r.context() + 1 + int64_t(d.size()));  // fewer drafts than asked (none when out of step)
    if (d.empty()) continue;
    force_drafts(d, r.forced_drafts, r.generated());  // benchmarks only
    r.spec_feed.assign(1, r.tokens.back());
    r.spec_feed.insert(r.spec_feed.end(), d.begin(), d.end());
    left[who[b]] = int64_t(r.spec_feed.size());
  }
}

bool Engine::Impl::sample_row(Req& r, std::vector<float>& row, StepTimes& t) {
  Event ev;
  try {
    ev = r->on_logits(row, tok->vocab_size(), scratch);
  } catch (const std::exception& e) {
    // Logits the sampler refuses (non-finite: a corrupt imported state) end this request
    // alone, with the reason; the batch goes on.
    finish(r, r->end_event(false, e.what()), true);
    return false;
  }
  ++t.generated;
  const auto now = RequestState::clock::now();
  if (!r->first_token_done) t.ttft.push_back(std::chrono::duration<double>(now - r->submitted).count());
  else t.itl.push_back(std::chrono::duration<double>(now - r->last_token).count());
  r->first_token_done = true;
  r->last_token = now;
  if (ev.finish != FinishReason::none) {
    finish(r, std::move(ev), true);
    return false;
  }
  deliver(*r, ev);
  return true;
}

// Samples the verified rows in order with the request's own sampler, keeping drafts while
// they equal the sampled token; then every state kind is rolled back to the kept tokens, the
// MTP catches up on them and the pool gives back blocks of rejected tokens.
void Engine::Impl::verify_drafts(Req& r, std::vector<float>& all, StepTimes& t, std::vector<Verified>& out) {
  const std::vector<int64_t> feed = std::move(r->spec_feed);
  r->spec_feed.clear();
  const int64_t n = int64_t(feed.size()), V = model->vocab_size(), c0 = r->context() - n;
  std::vector<float> row(static_cast<size_t>(V));
  // The request's own counters are current before each row is sampled: its last event reports them.
  r->spec.rounds += 1;
  r->spec.drafted += n - 1;
  int64_t keep = 0;
  while (keep < n) {
    std::copy_n(all.begin() + keep * V, V, row.begin());
    ++keep;
    r->spec.emitted += 1;
    if (!sample_row(r, row, t)) break;
    if (keep == n || r->tokens.back() != feed[size_t(keep)]) break;
    r->spec.accepted += 1;
  }
  {
    std::lock_guard lk(mu);
    ++m.spec_rounds;
    m.spec_drafted += n - 1;
    m.spec_accepted += keep - 1;
    m.spec_emitted += keep;
  }
  if (!r) return;  // finished: its cache is gone
  model->rollback(*r->state, r->undo, c0 + keep);
  r->undo.clear();
  out.push_back({&*r, std::move(feed), n - 1, keep - 1});
}

// The MTP catches up on every verified request's kept tokens in one pass (each weight read
// once for all of them); then each gives back its rejected tokens' blocks and checkpoints.
void Engine::Impl::finish_verified(std::vector<Verified>& verified) {
  if (verified.empty()) return;
  std::vector<MtpDrafter::SyncJob> syncs;
  for (auto& v : verified) syncs.push_back({&*v.r->state, v.feed.data(), v.kept + 1, v.r->hidden.data()});
  drafter->sync_batch(syncs);
  for (auto& v : verified) {
    pool->shrink(v.r->pool, v.r->context());
    v.r->draft_length->observe(int(v.drafted), int(v.kept));
    checkpoint(*v.r);
  }
}

// Snapshots asked for by export_request(), between two steps (no chunk is half-run).
void Engine::Impl::do_exports() {
  std::vector<std::shared_ptr<ExportJob>> jobs;
  {
    std::lock_guard lk(mu);
    jobs.swap(exports);
  }
  for (auto& job : jobs) {
    try {
      std::optional<RequestSnapshot> snap;
      for (auto& r : running)
        if (r && r->id == job->id) snap = r->snapshot(model->facts().model_type, export_layout);
      if (!snap) {
        std::lock_guard lk(mu);
        for (auto& r : waiting)
          if (r->id == job->id) snap = r->snapshot(model->facts().model_type, export_layout);
      }
      if (!snap) throw Error("no request " + std::to_string(job->id) + " to export (it has finished)");
      write_snapshot(job->path, *snap);
      job->done.set_value();
    } catch (...) {
      job->done.set_exception(std::current_exception());
    }
  }
}

void Engine::Impl::run() {
  while (step()) {
  }
  do_exports();
  {
    std::lock_guard lk(mu);
    stopped = true;
  }
  do_exports();  // any asked for meanwhile fail cleanly
  publish_pool();
}

// One engine step; false when the engine has stopped.
bool Engine::Impl::step() {
  std::vector<Req> ended_cancelled, ended_running;
  {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] {
      return stopping || !cancels.empty() || !exports.empty() || !waiting.empty() || !running.empty();
    });
  }
  do_exports();
  {
    std::unique_lock lk(mu);
    const bool cancel_all = stopping && !drain;
    if (cancel_all && shutdown_snapshots) {
      // after the last step and before the cancellations: each snapshot holds every token
      // its request's events carried
      auto write = [&](const Req& r) {
        const std::string path = shutdown_snapshots(r->id);
        if (path.empty()) return;
        try {
          write_snapshot(path, r->snapshot(model->facts().model_type, export_layout));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "strata: request %llu: no snapshot at shutdown: %s\n", (unsigned long long)r->id,
                       e.what());
        }
      };
      for (const auto& r : running)
        if (r) write(r);
      for (const auto& r : waiting) write(r);
      shutdown_snapshots = nullptr;
    }
    // Cancellations first: their cache is gone before this step runs.
    for (auto it = waiting.begin(); it != waiting.end();)
      if (cancel_all || cancels.count((*it)->id)) ended_cancelled.push_back(std::move(*it)), it = waiting.erase(it);
      else ++it;
    for (auto it = running.begin(); it != running.end();)
      if (cancel_all || cancels.count((*it)->id)) ended_running.push_back(std::move(*it)), it = running.erase(it);
      else ++it;
    cancels.clear();
  }
  for (auto& r : ended_cancelled) finish(r, r->cancel_event(), false);
  for (auto& r : ended_running) finish(r, r->cancel_event(), true);
  {
    std::unique_lock lk(mu);
    const bool idle = waiting.empty() && running.empty();
    // A shutdown that arrived after the cancellations above: cancel everything next step,
    // never stop with requests that will not get their last event.
    if (stopping && !drain && !idle) return true;
    if (stopping && (!drain || idle)) return false;
    // Admit in arrival order while there is room; the step plan below preempts if the
    // admitted requests' growth does not fit.
    int64_t held = 0;
    for (auto& r : running) held += bytes_for(r->context());
    while (!waiting.empty() && int64_t(running.size()) < opt.max_running) {
      auto& w = waiting.front();
      const int64_t first = std::min<int64_t>(int64_t(w->tokens.size()), opt.max_batch_tokens);
      if (!running.empty() && held + bytes_for(first) > pool_budget) break;
      held += bytes_for(first);
      running.push_back(std::move(w));
      waiting.pop_front();
    }
    // Preempted requests re-enter at the front, so running may need re-sorting by arrival.
    std::sort(running.begin(), running.end(), [](const Req& a, const Req& b) { return a->arrival < b->arrival; });
    m.waiting = int64_t(waiting.size());
    m.running = int64_t(running.size());
  }
  if (running.empty()) return true;
  for (auto& r : running)
    if (!r->state) start(*r);

  std::vector<SchedSeq> seqs;
  for (auto& r : running) seqs.push_back({r->arrival, r->context(), r->pending()});
  StepPlan plan = plan_step(seqs, opt.max_batch_tokens, pool_budget, [this](int64_t c) { return bytes_for(c); });

  // Preempt: free the cache now, recompute prompt + generated tokens when readmitted.
  if (!plan.preempt.empty()) {
    std::vector<Req> back;
    int64_t freed = 0;
    for (size_t i : plan.preempt) {  // newest first
      freed += running[i]->computed_high > running[i]->cached_prompt_tokens ? 1 : 0;  // not merely put back
      free_cache(*running[i]);
      back.push_back(std::move(running[i]));
    }
    std::lock_guard lk(mu);
    for (auto& r : back) waiting.push_front(std::move(r));
    m.preempted += freed;
  }
  // The pool is the authority: take every request's blocks for this step, oldest first; when
  // the pool cannot (alignment, or slots and blocks meeting in the middle), preempt the newest.
  for (size_t i = 0; i < running.size(); ++i) {
    if (!running[i]) continue;
    while (!reserve(*running[i], running[i]->context() + plan.chunk[i])) {
      size_t v = running.size();
      for (size_t j = running.size(); j-- > i + 1;)
        if (running[j]) {
          v = j;
          break;
        }
      if (v == running.size()) break;
      free_cache(*running[v]);
      std::lock_guard lk(mu);
      ++m.preempted;
      waiting.push_front(std::move(running[v]));
    }
    if (reserve(*running[i], running[i]->context() + plan.chunk[i])) continue;
    // The newest left still does not fit. With older requests holding the pool, that is the
    // pool's geometry (free blocks below the highest one cannot become a slot), not this
    // request's size: it waits for them like any preempted request. Alone, it cannot fit.
    if (std::any_of(running.begin(), running.begin() + ptrdiff_t(i), [](const Req& r) { return bool(r); })) {
      free_cache(*running[i]);
      std::lock_guard lk(mu);
      ++m.preempted;
      waiting.push_front(std::move(running[i]));
    } else {
      finish(running[i], running[i]->end_event(false, "out of cache memory"), true);
    }
  }

  int64_t recomputed = 0;
  std::vector<int64_t> left(running.size(), 0);
  std::vector<std::vector<float>> logits(running.size());
  for (size_t i = 0; i < running.size(); ++i) {
    if (!running[i] || plan.chunk[i] == 0) continue;
    RequestState& r = *running[i];
    const int64_t c0 = r.context(), n = plan.chunk[i];
    // Tokens below the high-water mark were computed before a preemption: recomputed.
    recomputed += std::max<int64_t>(0, std::min(c0 + n, r.computed_high) - c0);
    r.computed_high = std::max(r.computed_high, c0 + n);
    left[i] = n;
  }
  // A lone decoding request times its rounds, so its draft length follows what an extra
  // verified row really costs (DraftLength::observe_time); in a batch the load stands in.
  const auto t_round = RequestState::clock::now();
  plan_drafts(plan, left);
  const bool lone_decoder = drafter && running.size() == 1 && running[0] && plan.chunk[0] == 1 &&
                            running[0]->pending() == 1 && running[0]->generated() > 0;
  const int64_t lone_rows = lone_decoder ? left[0] : 0;
  run_batched(left, logits);
  if (lone_decoder && running[0])
    running[0]->draft_length->observe_time(
        lone_rows, std::chrono::duration<double>(RequestState::clock::now() - t_round).count());
  StepTimes times;
  std::vector<Verified> verified;
  for (size_t i = 0; i < running.size(); ++i) {
    Req& r = running[i];
    if (!r || plan.chunk[i] == 0) continue;
    if (!r->spec_feed.empty()) verify_drafts(r, logits[i], times, verified);
    else if (r->context() == int64_t(r->tokens.size())) sample_row(r, logits[i], times);
  }
  finish_verified(verified);
  running.erase(std::remove_if(running.begin(), running.end(), [](const Req& r) { return !r; }), running.end());
  {
    std::lock_guard lk(mu);
    m.generated_tokens += times.generated;
    m.recomputed_tokens += recomputed;
    for (double s : times.ttft) m.ttft.observe(s);
    for (double s : times.itl) m.itl.observe(s);
  }
  publish_pool();
  return true;
}

}  // namespace strata::engine
