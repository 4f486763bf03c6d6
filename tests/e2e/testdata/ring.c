/*
 * ring: an MPI program for TestMPI (tests/e2e/mpi_test.go). Each rank sends one message to
 * the next rank around the ring and checks the one it receives from the previous rank: the
 * sender's rank, the sender's host name (as the ranks' MPI_Allgather of their names gives it)
 * and a 1 MiB payload whose every byte depends on the sender's rank and the byte's offset
 * (larger than Open MPI's eager limits, so it crosses the network in fragments). A sum of the
 * ranks through MPI_Allreduce checks a collective too.
 *
 * Output, one line per rank on success:
 *   rank R of N on HOST: from rank P on PHOST, 1048576 bytes intact, sum S
 * and, from rank 0 first, "library: <first line of MPI_Get_library_version>". A check that
 * fails prints "rank R: FAIL <what>" and aborts the job (non-zero exit of every rank).
 *
 * Built by the test with mpicc from Debian's libopenmpi-dev: C bindings only, so one binary
 * built against Open MPI 4.1 runs with 5.0 too (Open MPI 5.0 keeps the C ABI of 4.x).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAYLOAD (1 << 20)
#define NAME MPI_MAX_PROCESSOR_NAME
#define HEADER (sizeof(int) + NAME)

static unsigned char pattern(int rank, size_t i) {
	return (unsigned char)(rank * 131 + i * 7 + (i >> 12));
}

static void fail(int rank, const char *what) {
	printf("rank %d: FAIL %s\n", rank, what);
	fflush(stdout);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
	int rank, size, len;
	char name[NAME] = {0};
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(name, &len);
	if (size < 2)
		fail(rank, "a ring needs at least 2 ranks");

	char *names = calloc((size_t)size, NAME);
	unsigned char *out = malloc(HEADER + PAYLOAD), *in = calloc(1, HEADER + PAYLOAD);
	if (names == NULL || out == NULL || in == NULL)
		fail(rank, "out of memory");
	MPI_Allgather(name, NAME, MPI_CHAR, names, NAME, MPI_CHAR, MPI_COMM_WORLD);

	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	memcpy(out, &rank, sizeof(int));
	memcpy(out + sizeof(int), name, NAME);
	for (size_t i = 0; i < PAYLOAD; i++)
		out[HEADER + i] = pattern(rank, i);
	MPI_Status st;
	MPI_Sendrecv(out, HEADER + PAYLOAD, MPI_BYTE, next, 7, in, HEADER + PAYLOAD, MPI_BYTE, prev, 7,
		     MPI_COMM_WORLD, &st);

	int count, from;
	char what[2 * NAME + 64];
	MPI_Get_count(&st, MPI_BYTE, &count);
	memcpy(&from, in, sizeof(int));
	const char *fromHost = (const char *)in + sizeof(int);
	if (count != (int)(HEADER + PAYLOAD)) {
		snprintf(what, sizeof what, "received %d bytes, want %d", count, (int)(HEADER + PAYLOAD));
		fail(rank, what);
	}
	if (st.MPI_SOURCE != prev || from != prev) {
		snprintf(what, sizeof what, "message from rank %d (says %d), want %d", st.MPI_SOURCE, from, prev);
		fail(rank, what);
	}
	if (strncmp(fromHost, names + (size_t)prev * NAME, NAME) != 0) {
		snprintf(what, sizeof what, "rank %d says it runs on %.*s, allgather says %.*s", prev, 64,
			 fromHost, 64, names + (size_t)prev * NAME);
		fail(rank, what);
	}
	for (size_t i = 0; i < PAYLOAD; i++) {
		if (in[HEADER + i] != pattern(prev, i)) {
			snprintf(what, sizeof what, "payload byte %zu is %u, want %u", i, in[HEADER + i],
				 pattern(prev, i));
			fail(rank, what);
		}
	}

	int sum = 0;
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (sum != size * (size - 1) / 2) {
		snprintf(what, sizeof what, "allreduce sum of ranks %d, want %d", sum, size * (size - 1) / 2);
		fail(rank, what);
	}

	if (rank == 0) {
		char lib[MPI_MAX_LIBRARY_VERSION_STRING];
		int n;
		MPI_Get_library_version(lib, &n);
		lib[strcspn(lib, "\n,")] = '\0';
		printf("library: %s\n", lib);
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	printf("rank %d of %d on %s: from rank %d on %s, %d bytes intact, sum %d\n", rank, size, name,
	       from, fromHost, PAYLOAD, sum);
	fflush(stdout);
	free(names);
	free(out);
	free(in);
	MPI_Finalize();
	return 0;
}
