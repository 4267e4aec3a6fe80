/* Compiles shmem/coll_typed.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/coll_typed.c"
