# The page's files under names that carry their content's hash, run by web/CMakeLists.txt after the
# client is linked: FOLDER/h/lockstep-web.HASH.js, .wasm and lockstep.HASH.js (each beside its gzip),
# and FOLDER/index.html naming them. The door serves h/ to be kept a year unasked (a new build is a
# new name), and index.html to be revalidated on every load, so a warm load costs one 304.
#   cmake -DFOLDER=<page folder> -DPAGE=<web/page> -P hashed_names.cmake
file(MAKE_DIRECTORY ${FOLDER}/h)
file(GLOB stale ${FOLDER}/h/*)
if(stale)
  file(REMOVE ${stale})
endif()
file(COPY_FILE ${PAGE}/lockstep.js ${FOLDER}/lockstep.js)
file(READ ${PAGE}/index.html html)
foreach(name lockstep-web.js lockstep-web.wasm lockstep.js)
  file(SHA256 ${FOLDER}/${name} hash)
  string(SUBSTRING ${hash} 0 16 hash)
  string(REGEX REPLACE "^(.*)\\.([a-z]+)$" "\\1.${hash}.\\2" hashed ${name})
  file(COPY_FILE ${FOLDER}/${name} ${FOLDER}/h/${hashed})
  set(named_${name} h/${hashed})
endforeach()
string(REPLACE "<script src=\"lockstep.js\"></script>"
       "<script>var lockstep_wasm = \"${named_lockstep-web.wasm}\";</script>\n<script src=\"${named_lockstep.js}\"></script>" html "${html}")
string(REPLACE "<script src=\"lockstep-web.js\"></script>" "<script src=\"${named_lockstep-web.js}\"></script>" html "${html}")
if(NOT html MATCHES "h/lockstep-web\\.[0-9a-f]+\\.js")
  message(FATAL_ERROR "hashed_names.cmake: ${PAGE}/index.html does not load lockstep.js and lockstep-web.js as expected")
endif()
file(WRITE ${FOLDER}/index.html "${html}")
file(GLOB hashed ${FOLDER}/h/*)
execute_process(COMMAND gzip -9 -n -k -f ${hashed} ${FOLDER}/index.html ${FOLDER}/lockstep.js COMMAND_ERROR_IS_FATAL ANY)
