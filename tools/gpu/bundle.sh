#!/usr/bin/env bash
# Collects executables built here and the shared libraries they need beyond
# the base system (Lamina's own, Highway, PCRE2, utf8proc, GoogleTest, ...)
# into one folder, so they run on a GPU machine that lacks those packages:
#   tools/gpu/bundle.sh BUILD_DIR OUT_DIR EXE...   (EXE relative to BUILD_DIR)
# then, there:  cd OUT_DIR && LD_LIBRARY_PATH=. ./EXE
# libmodel's CUDA backend module goes where libmodel looks by default
# (OUT_DIR/lamina/backends<soversion>/), as in an install.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR EXE..." >&2
  exit 2
fi
build=$1
out=$2
shift 2
mkdir -p "$out"
# Libraries every Linux machine with a C++ runtime has: never copied.
system_libs='^(linux-vdso|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|ld-linux|libstdc\+\+\.so|libgcc_s\.so)'
# copy_libs FILE: the shared libraries FILE needs, into OUT.
copy_libs() {
  ldd "$1" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    if ! [[ $name =~ $system_libs ]]; then
      cp -L "$path" "$out/$name"
    fi
  done
}
for exe in "$@"; do
  cp -L "$build/$exe" "$out/"
  copy_libs "$build/$exe"
done
# libmodel's CUDA backend module (loaded at run time, so ldd does not list
# it) where an install has it, beside libmodel: lamina/backends<soversion>/.
module=$build/libmodel/backends/cuda/lamina-model-cuda.so
if [ -f "$module" ]; then
  soname=$(readelf -d "$build"/libmodel/liblamina-model.so | sed -n 's/.*(SONAME).*\[liblamina-model\.so\.\(.*\)\]/\1/p')
  mkdir -p "$out/lamina/backends$soname"
  cp -L "$module" "$out/lamina/backends$soname/"
  copy_libs "$module"
fi
du -sh "$out"
