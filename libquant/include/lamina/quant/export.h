// Which declarations form liblamina-quant's ABI. The library is compiled with
// hidden visibility: only what carries LAMINA_QUANT_API is exported, so
// internal code (and what it instantiates) can change without an ABI change.
// LAMINA_QUANT_LOCAL marks the private nested types of exported classes (their
// pimpl structs), which would otherwise be exported with the class.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define LAMINA_QUANT_API __attribute__((visibility("default")))
#define LAMINA_QUANT_LOCAL __attribute__((visibility("hidden")))
#else
#define LAMINA_QUANT_API
#define LAMINA_QUANT_LOCAL
#endif
