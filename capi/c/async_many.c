/* hsa_amd_signal_async_handler with more handlers than one fixed-size wait list holds
 * (SIGNALS, above hsa-core's MAX_WAIT_EVENTS of 256 without `alloc`): each handler runs when
 * its signal reaches 1, the last registered as well as the first. The test
 * (capi/tests/c_abi.rs) records the emulated device's ioctls (HSA_RT_KFD_RECORD) and checks the
 * mechanism: the handler thread blocks in one AMDKFD_IOC_WAIT_EVENTS over every handler's
 * event and its wake signal's, with no timeout, so no handler waits for a turn.
 * Prints "async_many: ok" and exits 0 when every check holds. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "check.h"

#define SIGNALS 300

static atomic_int called[SIGNALS];

static bool on_signal(hsa_signal_value_t value, void* arg) {
  int i = (int)(intptr_t)arg;
  if (value == 1 && i >= 0 && i < SIGNALS) atomic_fetch_add(&called[i], 1);
  return false;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* Waits up to 10 s for handler i. */
static int wait_called(int i) {
  for (int k = 0; k < 1000 && !atomic_load(&called[i]); k++) sleep_ms(10);
  return atomic_load(&called[i]) == 1;
}

int main(void) {
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  EXPECT(cpu.handle != 0);
  hsa_signal_t s[SIGNALS];
  for (int i = 0; i < SIGNALS; i++) {
    OK(hsa_amd_signal_create(0, 0, NULL, 0, &s[i]));
    OK(hsa_amd_signal_async_handler(s[i], HSA_SIGNAL_CONDITION_EQ, 1, on_signal,
                                    (void*)(intptr_t)i));
  }
  /* Long enough for the handler thread to block on every event. */
  sleep_ms(300);
  hsa_signal_store_screlease(s[SIGNALS - 1], 1);
  EXPECT(wait_called(SIGNALS - 1));
  hsa_signal_store_screlease(s[0], 1);
  EXPECT(wait_called(0));
  for (int i = 1; i < SIGNALS - 1; i++) EXPECT(atomic_load(&called[i]) == 0);
  for (int i = 0; i < SIGNALS; i++) OK(hsa_signal_destroy(s[i]));
  OK(hsa_shut_down());
  if (failures) {
    fprintf(stderr, "async_many: %d checks failed\n", failures);
    return 1;
  }
  printf("async_many: ok\n");
  return 0;
}
