# Turns the static archive ARCHIVE into one relocatable object in which every definition but the
# remat_* functions is local, as in the shared library: an app linking libremat.a sees neither
# remat's internals nor remat's copies of C++ library inline functions and their statics, so
# neither can clash with the app's own (or with another library's copy of remat).
get_filename_component(dir ${ARCHIVE} DIRECTORY)
set(object ${dir}/remat_bundle.o)
# --force-group-allocation resolves COMDAT groups here: a group left in the object would be
# deduplicated against an app's copy of the same inline function while its symbols are local.
execute_process(COMMAND ${LINKER} -r --force-group-allocation --whole-archive ${ARCHIVE}
                        -o ${object}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${OBJCOPY} --wildcard --keep-global-symbol=remat_* ${object}
                COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE ${ARCHIVE})
execute_process(COMMAND ${AR} rcs ${ARCHIVE} ${object} COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE ${object})
