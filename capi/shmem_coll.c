/* Compiles shmem/coll.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/coll.c"
