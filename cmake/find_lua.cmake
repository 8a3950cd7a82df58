# find_lua.cmake -- Lua 5.4 for the host (headers and library) and for the
# module and libraries (headers only). Two ways, in this order:
#  1. LUA_INCDIR (and LUA_LIBDIR, LUALIB), as LuaRocks passes them
#     (claudelua-scm-1.rockspec), with no pkg-config file needed;
#  2. pkg-config under the names distributions use: lua5.4 (Debian),
#     lua-5.4 (FreeBSD), lua54, lua (Fedora, Arch, Homebrew).
# Either way lua.h must say 5.4. Defines the interface target claudelua_lua
# and CLAUDELUA_LUA_INCLUDE_DIRS.
set(LUA_INCDIR "" CACHE PATH "directory holding lua.h (LuaRocks passes it)")
set(LUA_LIBDIR "" CACHE PATH "directory holding the Lua library (with LUA_INCDIR)")
set(LUALIB "" CACHE STRING "file name of the Lua library in LUA_LIBDIR (with LUA_INCDIR)")

set(_lua_names lua5.4 lua54 lua-5.4 lua)
if(LUA_INCDIR)
  set(CLAUDELUA_LUA_INCLUDE_DIRS ${LUA_INCDIR})
  # the shared library first (C modules loaded into claudelua then find
  # every Lua symbol), LuaRocks' LUALIB (often the static one) last
  set(_lua_libnames ${_lua_names} ${LUALIB})
  find_library(CLAUDELUA_LUA_LIBRARY NAMES ${_lua_libnames}
               HINTS ${LUA_LIBDIR} ${LUA_INCDIR}/../lib ${LUA_INCDIR}/../../lib)
  if(NOT CLAUDELUA_LUA_LIBRARY)
    message(FATAL_ERROR "no Lua library (${_lua_libnames}) in LUA_LIBDIR='${LUA_LIBDIR}'")
  endif()
  set(_lua_libs ${CLAUDELUA_LUA_LIBRARY} ${CMAKE_DL_LIBS} m)
  set(_lua_how "LUA_INCDIR=${LUA_INCDIR}, ${CLAUDELUA_LUA_LIBRARY}")
else()
  find_package(PkgConfig REQUIRED)
  foreach(_name IN LISTS _lua_names)
    string(MAKE_C_IDENTIFIER "CLAUDELUA_PC_${_name}" _prefix)
    pkg_check_modules(${_prefix} QUIET ${_name})
    if(${_prefix}_FOUND AND ${_prefix}_VERSION VERSION_GREATER_EQUAL 5.4
       AND ${_prefix}_VERSION VERSION_LESS 5.5)
      set(CLAUDELUA_LUA_INCLUDE_DIRS ${${_prefix}_INCLUDE_DIRS})
      set(_lua_libs ${${_prefix}_LINK_LIBRARIES})
      set(_lua_how "pkg-config ${_name} ${${_prefix}_VERSION}")
      break()
    endif()
  endforeach()
  if(NOT _lua_how)
    message(FATAL_ERROR "Lua 5.4 not found: no pkg-config file (${_lua_names}) says 5.4; "
                        "install liblua5.4-dev, or pass -DLUA_INCDIR=... -DLUA_LIBDIR=...")
  endif()
endif()

# The header decides: a lua.h of another version would build a broken host.
unset(CLAUDELUA_LUA_H_DIR CACHE) # searched again at each configure (NO_CACHE needs 3.21)
find_path(CLAUDELUA_LUA_H_DIR lua.h HINTS ${CLAUDELUA_LUA_INCLUDE_DIRS})
if(NOT CLAUDELUA_LUA_H_DIR)
  message(FATAL_ERROR "lua.h not found (${_lua_how})")
endif()
string(REGEX REPLACE "(.)/+$" "\\1" CLAUDELUA_LUA_H_DIR "${CLAUDELUA_LUA_H_DIR}")
file(STRINGS "${CLAUDELUA_LUA_H_DIR}/lua.h" _lua_v REGEX "#define LUA_VERSION_(MAJOR|MINOR)[ \t]")
if(NOT _lua_v MATCHES "MAJOR[ \t]+\"5\"" OR NOT _lua_v MATCHES "MINOR[ \t]+\"4\"")
  message(FATAL_ERROR "${CLAUDELUA_LUA_H_DIR}/lua.h is not Lua 5.4 (${_lua_v})")
endif()
set(CLAUDELUA_LUA_INCLUDE_DIRS ${CLAUDELUA_LUA_H_DIR})
message(STATUS "Lua 5.4: ${_lua_how}")

add_library(claudelua_lua INTERFACE)
target_include_directories(claudelua_lua INTERFACE ${CLAUDELUA_LUA_INCLUDE_DIRS})
target_link_libraries(claudelua_lua INTERFACE ${_lua_libs})

# Lua 5.3's headers, for the module of 5.3 hosts (CLAUDELUA_LUA53): pkg-config under the
# names distributions use (lua5.3 on Debian), or LUA53_INCDIR. Sets
# CLAUDELUA_LUA53_INCLUDE_DIRS when lua.h there says 5.3; nothing otherwise.
set(LUA53_INCDIR "" CACHE PATH "directory holding Lua 5.3's lua.h (the 5.3 module)")
if(CLAUDELUA_LUA53)
  set(_lua53_dirs ${LUA53_INCDIR})
  find_package(PkgConfig QUIET)
  if(NOT LUA53_INCDIR AND PKG_CONFIG_FOUND)
    foreach(_name lua5.3 lua53 lua-5.3)
      string(MAKE_C_IDENTIFIER "CLAUDELUA_PC_${_name}" _prefix)
      pkg_check_modules(${_prefix} QUIET ${_name})
      if(${_prefix}_FOUND)
        set(_lua53_dirs ${${_prefix}_INCLUDE_DIRS})
        break()
      endif()
    endforeach()
  endif()
  unset(CLAUDELUA_LUA53_H_DIR CACHE)
  if(_lua53_dirs)
    find_path(CLAUDELUA_LUA53_H_DIR lua.h HINTS ${_lua53_dirs} NO_DEFAULT_PATH)
  endif()
  if(CLAUDELUA_LUA53_H_DIR)
    file(STRINGS "${CLAUDELUA_LUA53_H_DIR}/lua.h" _lua_v
         REGEX "#define LUA_VERSION_(MAJOR|MINOR)[ \t]")
    if(_lua_v MATCHES "MAJOR[ \t]+\"5\"" AND _lua_v MATCHES "MINOR[ \t]+\"3\"")
      set(CLAUDELUA_LUA53_INCLUDE_DIRS ${CLAUDELUA_LUA53_H_DIR})
      message(STATUS "Lua 5.3 (the module for 5.3 hosts): ${CLAUDELUA_LUA53_H_DIR}")
    endif()
  endif()
  if(NOT CLAUDELUA_LUA53_INCLUDE_DIRS)
    message(STATUS "Lua 5.3 headers not found (liblua5.3-dev): no module for 5.3 hosts")
  endif()
endif()
