// A serving engine: many completion requests share one Forward through
// continuous batching. Between decode steps, waiting requests are admitted
// into free sequence slots, prompts are processed in chunks alongside the
// decoding sequences, and a slot is freed as soon as its request ends or is
// cancelled. Because the forward pass is batch-invariant and each request
// has its own seeded sampler, a request's tokens do not depend on what runs
// beside it.
//
// KV memory: the forward pass's KV cache is a pool of blocks of
// kKvBlockPositions positions (ForwardOptions::kv_blocks) that the engine
// hands to the running requests; idle slots hold none. A request is admitted
// when the pool can give it its worst case (prompt plus min(max_tokens,
// context) positions; blocks shared with running requests count once), so
// it never runs out mid-flight; until then it waits in the queue. Blocks
// that hold a prompt prefix are shared by reference between the requests
// that start with it, and kept after they end (the prefix cache, evicted
// least recently used first), so a later request with the same system
// prompt or a growing chat computes only its new tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lamina/model/embedding.h"
#include "lamina/model/forward.h"
#include "lamina/model/model.h"
#include "lamina/model/sampler.h"
#include "lamina/model/export.h"

namespace lamina::model {

class TokenConstraint;

// The Engine constructor throws std::invalid_argument when max_step_tokens is
// below the number of slots (every decoding sequence gets a token each step)
// or prefill_chunk is 0.
struct LAMINA_MODEL_API EngineOptions {
  uint32_t max_queue = 64;          // requests waiting for a free slot; submit() refuses beyond this
  uint32_t max_step_tokens = 512;   // tokens per forward step, decode and prompt chunks together
  uint32_t prefill_chunk = 256;     // prompt tokens of one sequence per step
  // Reuse the KV blocks of earlier requests whose tokens prefix a new
  // prompt; off, only requests running together share (n > 1 samples).
  bool prefix_cache = true;
};

struct LAMINA_MODEL_API CompletionRequest {
  std::vector<int32_t> prompt_ids;  // must be non-empty and shorter than the context
  int32_t max_tokens = 128;         // < 0: until the context is full; 0: none (finish Length)
  SamplerOptions sampling;          // seed included: the same seed gives the same tokens
  std::vector<std::string> stop;    // stop strings (not included in the text); empty ones are ignored
  bool stop_at_eog = true;
  bool skip_special_tokens = true;  // the text leaves out special tokens (Hugging Face's decode option)
  int32_t top_logprobs = -1;        // < 0: no log-probabilities; 0..20: the chosen token's and that many alternatives
  // When set, only tokens that keep the text inside the grammar are sampled,
  // and the request ends where the grammar must (lamina/model/grammar.h).
  std::shared_ptr<TokenConstraint> constraint;
};

inline constexpr int32_t kMaxTopLogprobs = 20;

// Why a generation ended; the one vocabulary of generate() and the Engine.
// OpenAI's API folds these into "stop" (EndOfGeneration, StopString) and
// "length" (Length, ContextFull); finish_reason_name() keeps them apart.
enum class FinishReason {
  EndOfGeneration,  // an end-of-generation token came (it is not part of the output)
  StopString,       // a stop string completed (it is cut from the text)
  Length,           // max_tokens were generated
  ContextFull,      // the next token would need a position past the context
  Cancelled,
  Error,
};

struct LAMINA_MODEL_API TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;  // natural log of the probability after penalties, before temperature
};

// One generated token. `text` is what became safe to show with it (complete
// UTF-8, not possibly the start of a stop string); it may be empty. The last
// token of a request carries everything held back; when a request ends
// without one (end-of-generation token, cancellation, error), what was held
// back is CompletionResult::text_tail. End-of-generation tokens are not sent.
struct LAMINA_MODEL_API TokenEvent {
  int32_t id = 0;
  std::string text;
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // when top_logprobs > 0, most likely first
};

struct LAMINA_MODEL_API CompletionResult {
  FinishReason finish = FinishReason::Length;
  std::string error;               // when finish == Error
  std::vector<int32_t> generated_ids;
  std::string text;                // the whole generated text, stop string removed
  std::string text_tail;           // the end of `text` that no TokenEvent carried
  uint32_t prompt_tokens = 0;
  uint32_t cached_prompt_tokens = 0;  // reused from the prefix cache
  double queue_ms = 0.0;           // submit to admission
  double first_token_ms = 0.0;     // submit to the first generated token (0 when none)
};

// Called on the engine thread, in order; they must not block for long.
// on_token returning false cancels the request (e.g. its client went away).
struct LAMINA_MODEL_API CompletionCallbacks {
  std::function<bool(const TokenEvent&)> on_token;
  std::function<void(const CompletionResult&)> on_done;  // exactly once per accepted request
};

struct LAMINA_MODEL_API EngineStats {
  uint64_t requests_total = 0;
  uint64_t prompt_tokens_total = 0;         // of admitted requests, cached ones included
  uint64_t cached_prompt_tokens_total = 0;  // prompt tokens the prefix cache saved
  uint64_t generated_tokens_total = 0;
  uint32_t queue_depth = 0;
  uint32_t active_sequences = 0;
  uint32_t n_slots = 0;
  uint64_t kv_tokens_used = 0;     // positions held by active sequences
  uint64_t kv_tokens_capacity = 0; // slots x context, or the pool's positions when fewer
  uint32_t kv_blocks_total = 0;    // KV blocks in the pool (kKvBlockPositions positions each)
  uint32_t kv_blocks_in_use = 0;   // held by running requests
  uint32_t kv_blocks_cached = 0;   // held by none, kept for the prefix cache (evictable)
  uint32_t kv_blocks_peak = 0;     // the most ever in use at once
  uint32_t last_step_tokens = 0;   // tokens in the most recent forward step
  uint64_t steps_total = 0;
};

// Texts to embed (token ids each), pooled alike.
struct LAMINA_MODEL_API EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;  // each non-empty and shorter than the context
  Pooling pooling = Pooling::Last;
};

struct LAMINA_MODEL_API EmbeddingResult {
  std::vector<std::vector<float>> vectors;  // one per input, unit length (n_embd values)
  std::string error;                        // set when it failed (then no vectors)
};

class LAMINA_MODEL_API Engine {
 public:
  // Slots are the forward's sequence slots; the engine thread starts here.
  Engine(const Model& model, Forward& forward, const EngineOptions& options);
  ~Engine();  // cancels what is left and joins the thread (never from a callback)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  using RequestId = uint64_t;
  // Queues a request. Returns 0 when the queue is full or the engine is
  // stopping (nothing is called then). Throws std::invalid_argument for a
  // request that can never run (empty prompt, prompt not shorter than the
  // context, token id outside the vocabulary, top_logprobs above
  // kMaxTopLogprobs, a worst case of more KV blocks than the whole pool
  // holds). A request waits in the queue while its KV blocks are not free. Safe to call from any thread, callbacks included.
  RequestId submit(CompletionRequest request, CompletionCallbacks callbacks);
  // Queues embeddings: between forward steps, the engine thread runs as many
  // inputs at once as slots are free (a batch-invariant pass: an input's
  // vector does not depend on the others) and calls on_done once with all
  // the vectors or an error. False when the engine is stopping or the queue
  // is full (on_done is not called). Throws std::invalid_argument for a
  // request that can never run (no inputs, an empty or too long input, an
  // id outside the vocabulary). Safe to call from any thread.
  bool embed(EmbeddingRequest request, std::function<void(EmbeddingResult)> on_done);
  // Ends a request early (on_done gets FinishReason::Cancelled); no-op when done.
  void cancel(RequestId id);
  // Stops accepting and admitting: waiting requests end Cancelled; running
  // ones end normally with `finish_running`, else Cancelled. Returns once the
  // engine thread has stopped (at once when called from a callback). A later
  // call with finish_running = false cancels what still runs.
  void shutdown(bool finish_running);

  EngineStats stats() const;
  uint32_t n_ctx() const;

 private:
  struct LAMINA_MODEL_LOCAL State;
  std::unique_ptr<State> state_;
};

// "eog", "stop", "length", "context", "cancelled", "error".
LAMINA_MODEL_API std::string_view finish_reason_name(FinishReason reason);

}  // namespace lamina::model
