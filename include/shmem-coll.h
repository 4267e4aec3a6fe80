/*
 * shmem-coll.h: OpenSHMEM 1.5 teams, collectives, locks and the 1.4
 * active-set collectives. Included by shmem.h; not meant to be included on
 * its own. (Filled in by the collectives part of the layer.)
 */
#ifndef OPENFAM_SHMEM_COLL_H
#define OPENFAM_SHMEM_COLL_H
#endif
