// Which declarations form liblamina-cudaexec's ABI. The library is compiled with
// hidden visibility: only what carries LAMINA_CUDAEXEC_API is exported, so
// internal code (and what it instantiates) can change without an ABI change.
// LAMINA_CUDAEXEC_LOCAL marks the private nested types of exported classes (their
// pimpl structs), which would otherwise be exported with the class.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define LAMINA_CUDAEXEC_API __attribute__((visibility("default")))
#define LAMINA_CUDAEXEC_LOCAL __attribute__((visibility("hidden")))
#else
#define LAMINA_CUDAEXEC_API
#define LAMINA_CUDAEXEC_LOCAL
#endif
