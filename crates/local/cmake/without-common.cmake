# Included by llama.cpp's CMake right after its project() call (CMAKE_PROJECT_INCLUDE,
# set in .cargo/config.toml and handed to CMake by llama-cpp-sys-2's build script).
#
# llama-cpp-2 turns on llama-cpp-sys-2's default `common` feature, which builds
# llama.cpp's `common` library (argument parsing, chat parsers, a Jinja engine) and the
# HTTP library only it uses: about half of the C++ llama.cpp compiles, none of it
# called by agentls, which has its own templates and grammars. A normal variable
# shadows the cache entry the build script defines, and option() leaves it be
# (policy CMP0077), so those subdirectories are skipped. Nothing links against them:
# the script only looks for the library if its folder exists.
set(LLAMA_BUILD_COMMON OFF)

# llama.cpp's own library (model loading, graph building, its tokenizer) at -O1: the
# arithmetic is ggml's, which keeps -O3; agentls samples with its own code. -O1 took
# 155 s of compiler time where -O3 took 196 s (its 46 files, measured one by one), and
# `agentls bench model` on SmolLM2-135M, where llama.cpp's own code weighs most, was
# no slower: prompt 137-151 tok/s and generation 57 against 118 and 50 at -O3.
# Deferred to the end of the top-level directory, when the `llama` target exists; a
# later -O on the command line wins over CMAKE_CXX_FLAGS_RELEASE's -O3.
function(agentls_llama_at_o1)
    if(TARGET llama)
        set_property(TARGET llama APPEND PROPERTY COMPILE_OPTIONS -O1)
    endif()
endfunction()
# (DEFER is CMake 3.19; older ones build it all at -O3.)
if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.19)
    cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL agentls_llama_at_o1)
endif()
