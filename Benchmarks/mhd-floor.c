/* The floor for the relay's HTTP side (Benchmarks/relay-load.sh): libmicrohttpd, configured as
 * Herald's HTTP server is (internal poll threads, two of them), answering every request with an
 * empty 202 once its body is read, and doing nothing else. No Swift, no APNs. */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state) {
  (void)cls; (void)url; (void)method; (void)version; (void)upload;
  if (*state == NULL) { *state = connection; return MHD_YES; }
  if (*upload_size != 0) { *upload_size = 0; return MHD_YES; }
  struct MHD_Response *response = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
  enum MHD_Result queued = MHD_queue_response(connection, 202, response);
  MHD_destroy_response(response);
  return queued;
}

int main(int argc, char **argv) {
  unsigned port = argc > 1 ? (unsigned)atoi(argv[1]) : 3951;
  struct MHD_Daemon *daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, (uint16_t)port, NULL, NULL, &answer, NULL,
      MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(24 * 1024),
      MHD_OPTION_END);
  if (daemon == NULL) { fprintf(stderr, "mhd-floor: cannot listen on %u\n", port); return 1; }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigprocmask(SIG_BLOCK, &signals, NULL);
  int received;
  sigwait(&signals, &received);
  MHD_stop_daemon(daemon);
  return 0;
}
