/* Compiles shmem/coll_reduce.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/coll_reduce.c"
