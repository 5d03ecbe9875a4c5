/* A child forked while another thread of the parent runs signal operations: the child creates
 * and destroys a signal (hsa_signal_destroy waits out a grace period). The parent's thread may
 * be inside a read-side section at the fork; the child must not wait for that thread, which it
 * does not have. 20 forks, each child exiting with the status of its calls; prints
 * "fork_child: ok" and exits 0 when every child succeeded and the parent's signal counted
 * every add. Usage: fork_child */
#include <hsa/hsa.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 20
#define ADDS 2000000

static hsa_signal_t counter;
static atomic_int started;

static void* hammer(void* arg) {
  (void)arg;
  atomic_store(&started, 1);
  for (long i = 0; i < ADDS; i++) hsa_signal_add_relaxed(counter, 1);
  return NULL;
}

int main(void) {
  if (hsa_init() != HSA_STATUS_SUCCESS) return 1;
  if (hsa_signal_create(0, 0, NULL, &counter) != HSA_STATUS_SUCCESS) return 1;
  pthread_t t;
  pthread_create(&t, NULL, hammer, NULL);
  while (!atomic_load(&started)) sched_yield();
  int failed = 0;
  for (int i = 0; i < FORKS; i++) {
    pid_t p = fork();
    if (p == 0) {
      hsa_signal_t s;
      hsa_status_t st = hsa_signal_create(0, 0, NULL, &s);
      if (st == HSA_STATUS_SUCCESS) st = hsa_signal_destroy(s);
      _exit(st == HSA_STATUS_SUCCESS ? 0 : 1);
    }
    int ws = 0;
    if (p < 0 || waitpid(p, &ws, 0) != p || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      fprintf(stderr, "fork_child: child %d failed (wait status %#x)\n", i, ws);
      failed++;
    }
  }
  pthread_join(t, NULL);
  hsa_signal_value_t v = hsa_signal_load_relaxed(counter);
  if (v != ADDS) {
    fprintf(stderr, "fork_child: counter %ld, expected %d\n", (long)v, ADDS);
    failed++;
  }
  if (hsa_signal_destroy(counter) != HSA_STATUS_SUCCESS || hsa_shut_down() != HSA_STATUS_SUCCESS)
    failed++;
  if (failed) return 1;
  printf("fork_child: ok\n");
  return 0;
}
