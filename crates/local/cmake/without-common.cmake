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
