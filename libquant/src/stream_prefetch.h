// Software prefetch for the kernels that stream their weights once (one
// activation row: the decode step). One core's hardware prefetch alone
// keeps too few cache lines in flight to reach the memory's bandwidth with
// two cores; a prefetch a few KiB ahead of the reads, in the order the
// kernel reads and spread over its steps (a burst of them fills the core's
// miss buffers and its loads wait behind), closes the gap:
// libquant/bench/NOTES.md has the figures. Matmuls of several activation
// rows are compute bound and do not prefetch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "hwy/base.h"
#include "hwy/cache_control.h"

namespace lamina::quant::detail {

// How far ahead of its reads a stream prefetches: 4-8 KiB measured equally
// good, less loses speed when the bandwidth is high.
inline constexpr size_t kStreamPrefetchBytes = 6144;

// Prefetches the cache lines at p + kStreamPrefetchBytes + 64 i.
template <size_t... i>
HWY_INLINE void prefetch_lines(uintptr_t p, std::index_sequence<i...>) {
  (hwy::Prefetch(reinterpret_cast<const char*>(p + kStreamPrefetchBytes + 64 * i)), ...);
}

// Prefetches the cache lines of the kBytes that start kStreamPrefetchBytes
// after p. Past the end of the buffer this touches nothing (a prefetch does
// not fault); the address is formed as an integer, as it may point past it.
// Straight-line code: GCC deletes a loop whose only statements are
// prefetches.
template <size_t kBytes>
HWY_INLINE void prefetch_stream(const void* p) {
  prefetch_lines(reinterpret_cast<uintptr_t>(p), std::make_index_sequence<(kBytes + 63) / 64>{});
}

}  // namespace lamina::quant::detail
