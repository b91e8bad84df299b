# Included by llama.cpp's own project() call when llama-cpp-python is compiled by `make setup`, `make
# runtime` or `make llama-wheel` (-DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>; see
# assay/judge/cpu_build.py). llama-cpp-python forces llama.cpp's "common" library on (a cache variable
# set with FORCE), yet its Python package never loads it: without it, 83 compile steps instead of 140
# (multimodal library already left out by -DLLAVA_BUILD=OFF; times in benchmarks/llama_compile.py).
# A normal variable of the same name shadows the cache variable in llama.cpp's
# directory, so its option() and `if (LLAMA_BUILD_COMMON)` see OFF. The compiled libllama, libggml,
# libggml-base and libggml-cpu have the same machine code with or without this file (their .text
# sections compared byte for byte, portable build of 0.3.36).
set(LLAMA_BUILD_COMMON OFF)
