# Run by the build (cmake -DSOURCE_DIR=... -DSTAMP=... -P check_rooms.cmake):
# fails when a file includes from fs/ against the order of fs/rooms.cmake,
# when a source lies in fs/ outside a room, or when storage/ or cache/
# include fs/. Writes STAMP only when everything is in order.
cmake_minimum_required(VERSION 3.22)
include(${CMAKE_CURRENT_LIST_DIR}/rooms.cmake)
set(problems "")

file(GLOB loose RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/fs/*.h ${SOURCE_DIR}/fs/*.cc)
list(JOIN STAMPFS_FS_ROOMS ", " all_rooms)
foreach(f ${loose})
  string(APPEND problems "\n  ${f}: not in a room (move it into one of fs/{${all_rooms}})")
endforeach()

# Every file's includes of fs/: the room they name must be its own or one it uses.
function(check_dir dir allowed what)
  file(GLOB files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${dir}/*.h ${SOURCE_DIR}/${dir}/*.cc)
  foreach(f ${files})
    file(STRINGS ${SOURCE_DIR}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"fs/")
    foreach(line ${lines})
      string(REGEX MATCH "\"fs/([^/\"]*)/" room_dir "${line}")
      set(to "${CMAKE_MATCH_1}")
      if(NOT room_dir OR NOT to IN_LIST allowed)
        string(STRIP "${line}" line)
        string(APPEND problems "\n  ${f}: ${line}  (${what})")
      endif()
    endforeach()
  endforeach()
  set(problems "${problems}" PARENT_SCOPE)
endfunction()

foreach(room ${STAMPFS_FS_ROOMS})
  set(allowed ${room} ${STAMPFS_FS_USES_${room}})
  list(JOIN allowed ", " shown)
  check_dir(fs/${room} "${allowed}" "fs/${room}/ may include only fs/{${shown}}")
endforeach()
foreach(dir storage cache)
  check_dir(${dir} "" "${dir}/ includes nothing of fs/")
endforeach()

if(problems)
  message(FATAL_ERROR "fs/ rooms (fs/README.md; the order: fs/rooms.cmake):${problems}")
endif()
file(TOUCH ${STAMP})
